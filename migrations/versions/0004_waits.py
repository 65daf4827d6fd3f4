"""Durable waits: wait records, accepted signals and poll rounds.

Revision ID: 0004_waits
Revises: 0003_runtime
Create Date: 2025-01-04

The tables are frozen here (explicit columns); this file never imports weave_core.schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0004_waits"
down_revision: str | None = "0003_runtime"
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
    ("ix_weave_waits_instance", "weave_waits", ["instance_id", "state"]),
    (
        "ix_weave_signals_match",
        "weave_signals",
        ["instance_id", "state", "name", "correlation_key", "param_version", "accepted_at", "id"],
    ),
    ("ix_weave_signals_expiry", "weave_signals", ["state", "expires_at", "id"]),
)


def upgrade() -> None:
    op.create_table(
        "weave_waits",
        sa.Column("activation_id", sa.String(_ID), primary_key=True),
        sa.Column("namespace", sa.String(_NAME), nullable=False),
        sa.Column("instance_id", sa.String(_ID), nullable=False),
        sa.Column("step_id", sa.String(_NAME), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("signal_name", sa.String(_NAME), nullable=True),
        sa.Column("correlation_key", sa.String(256), nullable=True),
        sa.Column("param_version", sa.String(_NAME), nullable=True),
        sa.Column("opened_at", _TIMESTAMP, nullable=False),
        sa.Column("due_at", _TIMESTAMP, nullable=True),
        sa.Column("deadline_at", _TIMESTAMP, nullable=True),
        sa.Column("max_rounds", sa.Integer(), nullable=True),
        sa.Column("interval_seconds", sa.Integer(), nullable=True),
        sa.Column("current_round", sa.Integer(), nullable=False),
        sa.Column("next_round_at", _TIMESTAMP, nullable=True),
        sa.Column("last_status", sa.String(16), nullable=True),
        sa.Column("last_result", _DOCUMENT, nullable=True),
        sa.Column("winner", sa.String(32), nullable=True),
        sa.Column("winner_ref", sa.String(_NAME), nullable=True),
        sa.Column("reason", sa.String(128), nullable=True),
        sa.Column("settled_at", _TIMESTAMP, nullable=True),
        sa.Column("updated_at", _TIMESTAMP, nullable=False),
        **_OPTIONS,
    )
    op.create_table(
        "weave_signals",
        sa.Column("id", _BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("namespace", sa.String(_NAME), nullable=False),
        sa.Column("signal_id", sa.String(_NAME), nullable=False),
        sa.Column("instance_id", sa.String(_ID), nullable=False),
        sa.Column("name", sa.String(_NAME), nullable=False),
        sa.Column("correlation_key", sa.String(256), nullable=False),
        sa.Column("param_version", sa.String(_NAME), nullable=False),
        sa.Column("payload", _DOCUMENT, nullable=True),
        sa.Column("evidence", _DOCUMENT, nullable=True),
        sa.Column("content_hash", sa.CHAR(64), nullable=False),
        sa.Column("accepted_by", sa.String(255), nullable=False),
        sa.Column("accepted_at", _TIMESTAMP, nullable=False),
        sa.Column("expires_at", _TIMESTAMP, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("target_activation_id", sa.String(_ID), nullable=True),
        sa.Column("consumed_by_activation_id", sa.String(_ID), nullable=True),
        sa.Column("settled_at", _TIMESTAMP, nullable=True),
        sa.Column("reason", sa.String(128), nullable=True),
        sa.UniqueConstraint("namespace", "signal_id", name="uq_weave_signals_id"),
        **_OPTIONS,
    )
    op.create_table(
        "weave_poll_rounds",
        sa.Column("id", _BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("namespace", sa.String(_NAME), nullable=False),
        sa.Column("instance_id", sa.String(_ID), nullable=False),
        sa.Column("activation_id", sa.String(_ID), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.String(_ID), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("status", sa.String(32), nullable=True),
        sa.Column("result", _DOCUMENT, nullable=True),
        sa.Column("inbox_id", sa.BigInteger(), nullable=True),
        sa.Column("result_accepted_at", _TIMESTAMP, nullable=True),
        sa.Column("classification", sa.String(64), nullable=True),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("settled_at", _TIMESTAMP, nullable=True),
        sa.UniqueConstraint(
            "namespace", "instance_id", "activation_id", "round",
            name="uq_weave_poll_rounds_round",
        ),
        sa.UniqueConstraint("task_id", name="uq_weave_poll_rounds_task"),
        **_OPTIONS,
    )
    for name, table, columns in _INDEXES:
        op.create_index(name, table, columns)


def downgrade() -> None:
    for name, table, _columns in reversed(_INDEXES):
        op.drop_index(name, table_name=table)
    for table in ("weave_poll_rounds", "weave_signals", "weave_waits"):
        op.drop_table(table)
