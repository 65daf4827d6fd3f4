"""Dispatch: queues, namespace quotas, execution gates, tasks, attempts, task events, the
result inbox, and the minimal activations table the runtime extends.

Revision ID: 0002_dispatch
Revises: 0001_foundation
Create Date: 2025-01-02

The tables are frozen here (explicit columns); this file never imports weave_core.schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0002_dispatch"
down_revision: str | None = "0001_foundation"
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

# (index name, table, columns), created after the tables and dropped before them.
_INDEXES: tuple[tuple[str, str, list[str]], ...] = (
    (
        "ix_weave_tasks_claim",
        "weave_tasks",
        ["namespace", "queue", "status", "gate_open", "available_at", "task_id"],
    ),
    ("ix_weave_tasks_timeout", "weave_tasks", ["timeout_at", "task_id"]),
    ("ix_weave_tasks_gate", "weave_tasks", ["gate_id", "status"]),
    ("ix_weave_tasks_owner", "weave_tasks", ["namespace", "owner_id"]),
    ("ix_weave_task_events_task", "weave_task_events", ["task_id", "id"]),
    ("ix_weave_inbox_due", "weave_inbox", ["state", "available_at", "namespace", "id"]),
    ("ix_weave_activations_instance", "weave_activations", ["namespace", "instance_id"]),
)


def upgrade() -> None:
    op.create_table(
        "weave_queues",
        sa.Column("namespace", sa.String(_NAME), primary_key=True),
        sa.Column("name", sa.String(_NAME), primary_key=True),
        sa.Column("capacity", sa.Integer(), nullable=False),
        sa.Column("outstanding", sa.Integer(), nullable=False),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("updated_at", _TIMESTAMP, nullable=False),
        **_OPTIONS,
    )
    op.create_table(
        "weave_namespace_quotas",
        sa.Column("namespace", sa.String(_NAME), primary_key=True),
        sa.Column("task_quota", sa.Integer(), nullable=False),
        sa.Column("outstanding", sa.Integer(), nullable=False),
        sa.Column("updated_at", _TIMESTAMP, nullable=False),
        **_OPTIONS,
    )
    op.create_table(
        "weave_execution_gates",
        sa.Column("gate_id", sa.String(_ID), primary_key=True),
        sa.Column("namespace", sa.String(_NAME), nullable=False),
        sa.Column("is_open", sa.Boolean(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("updated_at", _TIMESTAMP, nullable=False),
        **_OPTIONS,
    )
    op.create_table(
        "weave_tasks",
        sa.Column("task_id", sa.String(_ID), primary_key=True),
        sa.Column("namespace", sa.String(_NAME), nullable=False),
        sa.Column("queue", sa.String(_NAME), nullable=False),
        sa.Column("owner_kind", sa.String(32), nullable=False),
        sa.Column("owner_id", sa.String(_ID), nullable=True),
        sa.Column("handler", sa.String(_NAME), nullable=False),
        sa.Column("handler_version", sa.String(_NAME), nullable=False),
        sa.Column("handler_key", sa.String(2 * _NAME + 1), nullable=False),
        sa.Column("idempotent", sa.Boolean(), nullable=False),
        sa.Column("input", _DOCUMENT, nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("attempts_used", sa.Integer(), nullable=False),
        sa.Column("backoff_ms", sa.BigInteger(), nullable=False),
        sa.Column("backoff_multiplier_milli", sa.Integer(), nullable=False),
        sa.Column("max_backoff_ms", sa.BigInteger(), nullable=False),
        sa.Column("schedule_to_start_s", sa.Integer(), nullable=True),
        sa.Column("start_to_close_s", sa.Integer(), nullable=True),
        sa.Column("heartbeat_timeout_s", sa.Integer(), nullable=True),
        sa.Column("deadline_at", _TIMESTAMP, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("available_at", _TIMESTAMP, nullable=False),
        sa.Column("start_by", _TIMESTAMP, nullable=True),
        sa.Column("timeout_at", _TIMESTAMP, nullable=True),
        sa.Column("gate_id", sa.String(_ID), nullable=True),
        sa.Column("gate_open", sa.Boolean(), nullable=False),
        sa.Column("effect_unknown", sa.Boolean(), nullable=False),
        sa.Column("result", _DOCUMENT, nullable=True),
        sa.Column("error", _DOCUMENT, nullable=True),
        sa.Column("current_attempt_id", sa.String(_ID), nullable=True),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("updated_at", _TIMESTAMP, nullable=False),
        **_OPTIONS,
    )
    op.create_table(
        "weave_task_attempts",
        sa.Column("attempt_id", sa.String(_ID), primary_key=True),
        sa.Column("task_id", sa.String(_ID), nullable=False),
        sa.Column("namespace", sa.String(_NAME), nullable=False),
        sa.Column("attempt_no", sa.Integer(), nullable=False),
        sa.Column("worker_id", sa.String(255), nullable=False),
        sa.Column("started_at", _TIMESTAMP, nullable=False),
        sa.Column("lease_expires_at", _TIMESTAMP, nullable=False),
        sa.Column("close_by", _TIMESTAMP, nullable=True),
        sa.Column("heartbeat_at", _TIMESTAMP, nullable=True),
        sa.Column("finished_at", _TIMESTAMP, nullable=True),
        sa.Column("outcome", sa.String(32), nullable=True),
        sa.Column("report_hash", sa.CHAR(64), nullable=True),
        sa.UniqueConstraint("task_id", "attempt_no", name="uq_weave_task_attempts_no"),
        **_OPTIONS,
    )
    op.create_table(
        "weave_task_events",
        sa.Column("id", _BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("namespace", sa.String(_NAME), nullable=False),
        sa.Column("task_id", sa.String(_ID), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("event_type", sa.String(64), nullable=False),
        sa.Column("attempt_id", sa.String(_ID), nullable=True),
        sa.Column("occurred_at", _TIMESTAMP, nullable=False),
        sa.Column("payload", _DOCUMENT, nullable=True),
        **_OPTIONS,
    )
    op.create_table(
        "weave_inbox",
        sa.Column("id", _BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("namespace", sa.String(_NAME), nullable=False),
        sa.Column("event_id", sa.String(_NAME), nullable=False),
        sa.Column("event_type", sa.String(32), nullable=False),
        sa.Column("source_task_id", sa.String(_ID), nullable=False),
        sa.Column("source_activation_id", sa.String(_ID), nullable=False),
        sa.Column("source_revision", sa.Integer(), nullable=False),
        sa.Column("snapshot", _DOCUMENT, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("available_at", _TIMESTAMP, nullable=False),
        sa.Column("row_version", sa.Integer(), nullable=False),
        sa.Column("error_code", sa.String(64), nullable=True),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("processed_at", _TIMESTAMP, nullable=True),
        sa.UniqueConstraint("namespace", "event_id", name="uq_weave_inbox_event"),
        sa.UniqueConstraint(
            "namespace", "source_task_id", "source_revision", name="uq_weave_inbox_source"
        ),
        sa.CheckConstraint("source_revision > 0", name="ck_weave_inbox_source_revision"),
        **_OPTIONS,
    )
    op.create_table(
        "weave_activations",
        sa.Column("activation_id", sa.String(_ID), primary_key=True),
        sa.Column("namespace", sa.String(_NAME), nullable=False),
        sa.Column("instance_id", sa.String(_ID), nullable=False),
        sa.Column("step_id", sa.String(_NAME), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("state_version", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.String(_ID), nullable=True),
        sa.Column("poll_round", sa.Integer(), nullable=True),
        sa.Column("gate_id", sa.String(_ID), nullable=True),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        **_OPTIONS,
    )
    for name, table, columns in _INDEXES:
        op.create_index(name, table, columns)


def downgrade() -> None:
    for name, table, _columns in reversed(_INDEXES):
        op.drop_index(name, table_name=table)
    for table in (
        "weave_activations",
        "weave_inbox",
        "weave_task_events",
        "weave_task_attempts",
        "weave_tasks",
        "weave_execution_gates",
        "weave_namespace_quotas",
        "weave_queues",
    ):
        op.drop_table(table)
