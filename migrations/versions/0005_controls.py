"""Controls: the operations of operators (pause, resume, cancel, review conclusions,
resolve, recover) with their operator, reason, expected version and first outcome.

Revision ID: 0005_controls
Revises: 0004_waits
Create Date: 2025-01-05

The table is frozen here (explicit columns); this file never imports weave_core.schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0005_controls"
down_revision: str | None = "0004_waits"
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
        "weave_operations",
        sa.Column("namespace", sa.String(128), primary_key=True),
        sa.Column("operation_id", sa.String(64), primary_key=True),
        sa.Column("instance_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("actor", sa.String(255), nullable=False),
        sa.Column("reason", sa.String(1024), nullable=False),
        sa.Column("expected_version", sa.Integer(), nullable=True),
        sa.Column("step_id", sa.String(128), nullable=True),
        sa.Column("activation_id", sa.String(64), nullable=True),
        sa.Column("new_activation_id", sa.String(64), nullable=True),
        sa.Column("conclusion", sa.String(64), nullable=True),
        sa.Column("evidence", _DOCUMENT, nullable=True),
        sa.Column("request_hash", sa.CHAR(64), nullable=False),
        sa.Column("outcome", _DOCUMENT, nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        **_OPTIONS,
    )
    op.create_index("ix_weave_operations_instance", "weave_operations",
                    ["namespace", "instance_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_weave_operations_instance", table_name="weave_operations")
    op.drop_table("weave_operations")
