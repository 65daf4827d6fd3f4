"""Review (issue 12): the effective configuration an instance was accepted with.

``weave_instance_configs`` holds each distinct effective configuration (the limits and the
defaults resolved at start, canonical exact JSON) once, under its content hash;
``weave_instances.config_hash`` names the one an instance runs under. NULL for instances
started before this revision: they keep using the engine's current values.

Revision ID: 0007_review
Revises: 0006_visibility
Create Date: 2026-12-02

The table and column are frozen here (explicit types); this file never imports
weave_core.schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0007_review"
down_revision: str | None = "0006_visibility"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
_DOCUMENT = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


def upgrade() -> None:
    op.create_table(
        "weave_instance_configs",
        sa.Column("config_hash", sa.CHAR(64), primary_key=True),
        sa.Column("config", _DOCUMENT, nullable=False),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        **_OPTIONS,
    )
    with op.batch_alter_table("weave_instances") as batch:
        batch.add_column(sa.Column("config_hash", sa.CHAR(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("weave_instances") as batch:
        batch.drop_column("config_hash")
    op.drop_table("weave_instance_configs")
