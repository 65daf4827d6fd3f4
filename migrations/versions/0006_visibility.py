"""Visibility: which workers serve which (queue, handler, version), with a last-seen time;
history retention per namespace, and the index the purge finds settled instances by.

Revision ID: 0006_visibility
Revises: 0005_controls
Create Date: 2026-12-02

The table is frozen here (explicit columns); this file never imports weave_core.schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0006_visibility"
down_revision: str | None = "0005_controls"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


def upgrade() -> None:
    op.create_table(
        "weave_worker_sightings",
        sa.Column("namespace", sa.String(128), primary_key=True),
        sa.Column("queue", sa.String(128), primary_key=True),
        sa.Column("handler", sa.String(128), primary_key=True),
        sa.Column("handler_version", sa.String(128), primary_key=True),
        sa.Column("worker_id", sa.String(255), primary_key=True),
        sa.Column("last_seen_at", _TIMESTAMP, nullable=False),
        **_OPTIONS,
    )
    op.add_column("weave_namespaces", sa.Column("retention_days", sa.Integer(), nullable=True))
    op.create_index("ix_weave_instances_settled", "weave_instances",
                    ["namespace", "settled_at", "instance_id"])


def downgrade() -> None:
    op.drop_index("ix_weave_instances_settled", table_name="weave_instances")
    with op.batch_alter_table("weave_namespaces") as batch:
        batch.drop_column("retention_days")
    op.drop_table("weave_worker_sightings")
