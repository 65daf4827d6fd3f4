"""Runtime: instances, idempotency records, steps, pending advances, transitions, and the
runtime's columns on weave_activations.

Revision ID: 0003_runtime
Revises: 0002_dispatch
Create Date: 2025-01-03

The tables are frozen here (explicit columns); this file never imports weave_core.schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0003_runtime"
down_revision: str | None = "0002_dispatch"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
_DOCUMENT = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
_BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}
_ID = 64
_NAME = 128

_INDEXES: tuple[tuple[str, str, list[str]], ...] = (
    ("ix_weave_instances_created", "weave_instances", ["namespace", "created_at", "instance_id"]),
    (
        "ix_weave_instances_status",
        "weave_instances",
        ["namespace", "status", "created_at", "instance_id"],
    ),
    (
        "ix_weave_instances_definition",
        "weave_instances",
        ["namespace", "definition_id", "version", "created_at", "instance_id"],
    ),
    ("ix_weave_pending_advances_due", "weave_pending_advances", ["state", "due_at", "id"]),
)



def _activation_columns() -> list[sa.Column[Any]]:
    """The runtime's columns on weave_activations (nullable: dispatch rows stay valid)."""
    return [
        sa.Column("kind", sa.String(32), nullable=True),
        sa.Column("command", _DOCUMENT, nullable=True),
        sa.Column("result_revision", sa.Integer(), nullable=True),
        sa.Column("reason", sa.String(128), nullable=True),
        sa.Column("updated_at", _TIMESTAMP, nullable=True),
        sa.Column("settled_at", _TIMESTAMP, nullable=True),
    ]


def upgrade() -> None:
    op.create_table(
        "weave_instances",
        sa.Column("instance_id", sa.String(_ID), primary_key=True),
        sa.Column("namespace", sa.String(_NAME), nullable=False),
        sa.Column("definition_id", sa.String(_NAME), nullable=False),
        sa.Column("version", sa.String(_NAME), nullable=False),
        sa.Column("content_hash", sa.CHAR(64), nullable=False),
        sa.Column("input", _DOCUMENT, nullable=False),
        sa.Column("queues", sa.String(4096), nullable=False),
        sa.Column("failure_policy", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False),
        sa.Column("control_version", sa.Integer(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("root_version", sa.Integer(), nullable=False),
        sa.Column("gate_id", sa.String(_ID), nullable=False),
        sa.Column("deadline_at", _TIMESTAMP, nullable=False),
        sa.Column("output", _DOCUMENT, nullable=True),
        sa.Column("review_reason", sa.String(128), nullable=True),
        sa.Column("operation_type", sa.String(64), nullable=False),
        sa.Column("idempotency_key", sa.String(255), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("updated_at", _TIMESTAMP, nullable=False),
        sa.Column("settled_at", _TIMESTAMP, nullable=True),
        **_OPTIONS,
    )
    op.create_table(
        "weave_idempotency",
        sa.Column("namespace", sa.String(_NAME), primary_key=True),
        sa.Column("operation_type", sa.String(64), primary_key=True),
        sa.Column("idempotency_key", sa.String(255), primary_key=True),
        sa.Column("request_hash", sa.CHAR(64), nullable=False),
        sa.Column("instance_id", sa.String(_ID), nullable=False),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        **_OPTIONS,
    )
    op.create_table(
        "weave_steps",
        sa.Column("instance_id", sa.String(_ID), primary_key=True),
        sa.Column("step_id", sa.String(_NAME), primary_key=True),
        sa.Column("namespace", sa.String(_NAME), nullable=False),
        sa.Column("phase", sa.String(16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("output", _DOCUMENT, nullable=True),
        sa.Column("decision", _DOCUMENT, nullable=True),
        sa.Column("activation_id", sa.String(_ID), nullable=True),
        sa.Column("reason", sa.String(128), nullable=True),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("updated_at", _TIMESTAMP, nullable=False),
        **_OPTIONS,
    )
    op.create_table(
        "weave_pending_advances",
        sa.Column("id", _BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("namespace", sa.String(_NAME), nullable=False),
        sa.Column("instance_id", sa.String(_ID), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("ref", sa.String(_ID), nullable=False),
        sa.Column("due_at", _TIMESTAMP, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(64), nullable=False),
        sa.Column("root_version", sa.Integer(), nullable=False),
        sa.Column("root_identity", sa.String(2 * _NAME + 1), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("updated_at", _TIMESTAMP, nullable=False),
        sa.UniqueConstraint("instance_id", "kind", "ref", name="uq_weave_pending_advances_ref"),
        **_OPTIONS,
    )
    op.create_table(
        "weave_transitions",
        sa.Column("instance_id", sa.String(_ID), primary_key=True),
        sa.Column("revision", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("namespace", sa.String(_NAME), nullable=False),
        sa.Column("occurred_at", _TIMESTAMP, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("step_id", sa.String(_NAME), nullable=True),
        sa.Column("activation_id", sa.String(_ID), nullable=True),
        sa.Column("from_state", sa.String(32), nullable=True),
        sa.Column("to_state", sa.String(32), nullable=True),
        sa.Column("reason", sa.String(128), nullable=True),
        sa.Column("details", _DOCUMENT, nullable=True),
        sa.Column("operation_id", sa.String(64), nullable=False),
        sa.Column("audit_id", sa.BigInteger(), nullable=True),
        **_OPTIONS,
    )
    for name, table, columns in _INDEXES:
        op.create_index(name, table, columns)
    with op.batch_alter_table("weave_activations") as batch:
        for column in _activation_columns():
            batch.add_column(column)


def downgrade() -> None:
    with op.batch_alter_table("weave_activations") as batch:
        for column in reversed(_activation_columns()):
            batch.drop_column(column.name)
    for name, table, _columns in reversed(_INDEXES):
        op.drop_index(name, table_name=table)
    for table in (
        "weave_transitions",
        "weave_pending_advances",
        "weave_steps",
        "weave_idempotency",
        "weave_instances",
    ):
        op.drop_table(table)
