"""Foundation: namespaces, API tokens, definitions, audit, the test clock.

Revision ID: 0001_foundation
Revises:
Create Date: 2025-01-01

The tables are frozen here (explicit columns); this file never imports weave_core.schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0001_foundation"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen column types and table options of this revision.
_TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
_DOCUMENT = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
_BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


def upgrade() -> None:
    op.create_table(
        "weave_namespaces",
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False, server_default=sa.text("0")),
        **_OPTIONS,
    )

    op.create_table(
        "weave_api_tokens",
        sa.Column("token_id", sa.String(32), primary_key=True),
        sa.Column("namespace", sa.String(128), nullable=False),
        sa.Column("token_hash", sa.CHAR(64), nullable=False),
        sa.Column("permissions", sa.String(255), nullable=False),
        sa.Column("description", sa.String(255), nullable=True),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("revoked_at", _TIMESTAMP, nullable=True),
        **_OPTIONS,
    )
    op.create_index("ix_weave_api_tokens_namespace", "weave_api_tokens", ["namespace"])

    op.create_table(
        "weave_definitions",
        sa.Column("seq", _BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("namespace", sa.String(128), nullable=False),
        sa.Column("definition_id", sa.String(128), nullable=False),
        sa.Column("version", sa.String(128), nullable=False),
        sa.Column("content_hash", sa.CHAR(64), nullable=False),
        sa.Column("document", _DOCUMENT, nullable=False),
        sa.Column("published_at", _TIMESTAMP, nullable=False),
        sa.Column("published_by", sa.String(255), nullable=False),
        sa.UniqueConstraint(
            "namespace", "definition_id", "version", name="uq_weave_definitions_version"
        ),
        **_OPTIONS,
    )
    op.create_index(
        "ix_weave_definitions_latest", "weave_definitions", ["namespace", "definition_id", "seq"]
    )

    op.create_table(
        "weave_audit",
        sa.Column("id", _BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("namespace", sa.String(128), nullable=False),
        sa.Column("occurred_at", _TIMESTAMP, nullable=False),
        sa.Column("actor", sa.String(255), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("object_type", sa.String(64), nullable=False),
        sa.Column("object_id", sa.String(255), nullable=False),
        sa.Column("operation_id", sa.String(64), nullable=True),
        sa.Column("metadata", _DOCUMENT, nullable=True),
        **_OPTIONS,
    )
    op.create_index(
        "ix_weave_audit_object",
        "weave_audit",
        ["namespace", "object_type", "object_id", "id"],
    )

    clock = op.create_table(
        "weave_clock",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("offset_us", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
        **_OPTIONS,
    )
    op.bulk_insert(clock, [{"id": 1, "offset_us": 0}])


def downgrade() -> None:
    op.drop_table("weave_clock")
    op.drop_index("ix_weave_audit_object", table_name="weave_audit")
    op.drop_table("weave_audit")
    op.drop_index("ix_weave_definitions_latest", table_name="weave_definitions")
    op.drop_table("weave_definitions")
    op.drop_index("ix_weave_api_tokens_namespace", table_name="weave_api_tokens")
    op.drop_table("weave_api_tokens")
    op.drop_table("weave_namespaces")
