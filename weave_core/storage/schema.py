"""Every table of the engine, as SQLAlchemy Core on one ``MetaData``.

Rules (MariaDB from day one; see docs/storage.md):
- ``DATETIME(6)`` for every time (naive UTC, from database time only: ``Database.now``);
- ``VARCHAR`` for every key or indexed column, never TEXT;
- JSON documents are our own canonical text (``exactjson.dumps``) in ``MEDIUMTEXT``,
  never the JSON type, and TEXT columns have no defaults;
- utf8mb4 with a binary collation, so keys compare exactly as on SQLite;
- no foreign keys: integrity comes from the lock order and the transactions;
- an explicit, named index for every scan.

This module is the live model. Migrations never import it: each migration freezes its own
table definitions, and a test checks that the migrated database matches this module.
Namespaces are referenced by their name everywhere.
"""

from __future__ import annotations

from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

metadata = sa.MetaData()

# --- column types --------------------------------------------------------------------

Timestamp: Final = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
"""A naive UTC time with microseconds."""

Document: Final = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
"""Canonical JSON text (up to 16 MiB on MySQL)."""

BigId: Final = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
"""An auto-increment id (SQLite only auto-increments ``INTEGER PRIMARY KEY``)."""

NAME_LENGTH: Final = 128  # namespace names and identifiers (limits.max_id_length)

TABLE_OPTIONS: Final[dict[str, Any]] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


def _namespace() -> sa.Column[str]:
    return sa.Column("namespace", sa.String(NAME_LENGTH), nullable=False)


# --- identity ------------------------------------------------------------------------

# A namespace isolates everything; objects of another namespace are invisible. Its row is
# the identity lock (R-6.2, taken shared by every operation in the namespace).
weave_namespaces = sa.Table(
    "weave_namespaces",
    metadata,
    sa.Column("name", sa.String(NAME_LENGTH), primary_key=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("disabled", sa.Boolean(), nullable=False, server_default=sa.text("0")),
    # History retention in days (0006; NULL: runtime/retention.DEFAULT_RETENTION_DAYS).
    sa.Column("retention_days", sa.Integer(), nullable=True),
    **TABLE_OPTIONS,
)

# API tokens: only the SHA-256 of the full secret is kept. Looked up by token_id (the
# public part of the token) on every request.
weave_api_tokens = sa.Table(
    "weave_api_tokens",
    metadata,
    sa.Column("token_id", sa.String(32), primary_key=True),
    _namespace(),
    sa.Column("token_hash", sa.CHAR(64), nullable=False),
    sa.Column("permissions", sa.String(255), nullable=False),  # sorted, comma separated
    sa.Column("description", sa.String(255), nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("revoked_at", Timestamp, nullable=True),
    sa.Index("ix_weave_api_tokens_namespace", "namespace"),
    **TABLE_OPTIONS,
)

# --- definitions ---------------------------------------------------------------------

# Immutable definition versions. ``seq`` orders the versions of one definition: "latest"
# is the highest seq.
weave_definitions = sa.Table(
    "weave_definitions",
    metadata,
    sa.Column("seq", BigId, primary_key=True, autoincrement=True),
    _namespace(),
    sa.Column("definition_id", sa.String(NAME_LENGTH), nullable=False),
    sa.Column("version", sa.String(NAME_LENGTH), nullable=False),
    sa.Column("content_hash", sa.CHAR(64), nullable=False),
    sa.Column("document", Document, nullable=False),
    sa.Column("published_at", Timestamp, nullable=False),
    sa.Column("published_by", sa.String(255), nullable=False),
    sa.UniqueConstraint(
        "namespace", "definition_id", "version", name="uq_weave_definitions_version"
    ),
    sa.Index("ix_weave_definitions_latest", "namespace", "definition_id", "seq"),
    **TABLE_OPTIONS,
)

# --- audit ---------------------------------------------------------------------------

# One row per recorded change, written in the transaction of the change. Read
# per object in id order.
weave_audit = sa.Table(
    "weave_audit",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    _namespace(),
    sa.Column("occurred_at", Timestamp, nullable=False),
    sa.Column("actor", sa.String(255), nullable=False),
    sa.Column("action", sa.String(64), nullable=False),
    sa.Column("object_type", sa.String(64), nullable=False),
    sa.Column("object_id", sa.String(255), nullable=False),
    sa.Column("operation_id", sa.String(64), nullable=True),
    sa.Column("metadata", Document, nullable=True),  # canonical JSON
    sa.Index("ix_weave_audit_object", "namespace", "object_type", "object_id", "id"),
    **TABLE_OPTIONS,
)

# --- database time -------------------------------------------------------------------

# One row (id 1): an offset in microseconds that Database.now adds to database time, so
# tests can move time without sleeping. 0 in production.
weave_clock = sa.Table(
    "weave_clock",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
    sa.Column("offset_us", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
    **TABLE_OPTIONS,
)

_ID: Final = 64  # task, attempt, gate, activation, instance ids
_NAME: Final = 128  # namespace, queue, handler names and versions

# --- dispatch (issue 4) --------------------------------------------------------------

# A queue: its capacity (max outstanding tasks) and how many it holds now. Created on
# first use with the default capacity. Locked at level QUEUES.
weave_queues = sa.Table(
    "weave_queues",
    metadata,
    sa.Column("namespace", sa.String(_NAME), primary_key=True),
    sa.Column("name", sa.String(_NAME), primary_key=True),
    sa.Column("capacity", sa.Integer(), nullable=False),
    sa.Column("outstanding", sa.BigInteger(), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    **TABLE_OPTIONS,
)

# The namespace's quota of outstanding (PENDING or RUNNING) tasks and its usage. Created
# on first use with the default quota. Locked at level NAMESPACE_QUOTA.
weave_namespace_quotas = sa.Table(
    "weave_namespace_quotas",
    metadata,
    sa.Column("namespace", sa.String(_NAME), primary_key=True),
    sa.Column("task_quota", sa.Integer(), nullable=False),
    sa.Column("outstanding", sa.BigInteger(), nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    **TABLE_OPTIONS,
)

# Units given back by transactions that do not hold a counter's row lock (release shards,
# ``dispatch.releases``): a quota's or queue's true outstanding count is its row's
# ``outstanding`` minus the ``released`` of its shards. ``counter`` is "" for the namespace
# quota, else the queue's name. Shards only grow; a release takes one with SKIP LOCKED.
weave_capacity_releases = sa.Table(
    "weave_capacity_releases",
    metadata,
    sa.Column("namespace", sa.String(_NAME), primary_key=True),
    sa.Column("counter", sa.String(_NAME), primary_key=True),
    sa.Column("shard", sa.SmallInteger(), primary_key=True, autoincrement=False),
    sa.Column("released", sa.BigInteger(), nullable=False),
    **TABLE_OPTIONS,
)

# Execution gates: closed, nothing of the gate is claimed, started or retried. The
# current ``is_open`` is copied onto the gate's unsettled tasks (``gate_open``) in the
# transaction that changes it, so the claim query filters on it inside its index.
weave_execution_gates = sa.Table(
    "weave_execution_gates",
    metadata,
    sa.Column("gate_id", sa.String(_ID), primary_key=True),
    sa.Column("namespace", sa.String(_NAME), nullable=False),
    sa.Column("is_open", sa.Boolean(), nullable=False),
    sa.Column("version", sa.Integer(), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    **TABLE_OPTIONS,
)

# Dispatch tasks. ``timeout_at`` is the next instant the lease sweep must look at the
# task (start-by or deadline while PENDING, lease expiry while RUNNING; NULL once
# settled). ``handler_key`` is ``name@version`` (what a worker declares).
weave_tasks = sa.Table(
    "weave_tasks",
    metadata,
    sa.Column("task_id", sa.String(_ID), primary_key=True),
    sa.Column("namespace", sa.String(_NAME), nullable=False),
    sa.Column("queue", sa.String(_NAME), nullable=False),
    sa.Column("owner_kind", sa.String(32), nullable=False),
    sa.Column("owner_id", sa.String(_ID), nullable=True),
    sa.Column("handler", sa.String(_NAME), nullable=False),
    sa.Column("handler_version", sa.String(_NAME), nullable=False),
    sa.Column("handler_key", sa.String(2 * _NAME + 1), nullable=False),
    sa.Column("idempotent", sa.Boolean(), nullable=False),
    sa.Column("input", Document, nullable=False),
    sa.Column("max_attempts", sa.Integer(), nullable=False),
    sa.Column("attempts_used", sa.Integer(), nullable=False),
    sa.Column("backoff_ms", sa.BigInteger(), nullable=False),
    sa.Column("backoff_multiplier_milli", sa.Integer(), nullable=False),
    sa.Column("max_backoff_ms", sa.BigInteger(), nullable=False),
    sa.Column("schedule_to_start_s", sa.Integer(), nullable=True),
    sa.Column("start_to_close_s", sa.Integer(), nullable=True),
    sa.Column("heartbeat_timeout_s", sa.Integer(), nullable=True),
    sa.Column("deadline_at", Timestamp, nullable=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("revision", sa.Integer(), nullable=False),
    sa.Column("available_at", Timestamp, nullable=False),
    sa.Column("start_by", Timestamp, nullable=True),
    sa.Column("timeout_at", Timestamp, nullable=True),
    sa.Column("gate_id", sa.String(_ID), nullable=True),
    sa.Column("gate_open", sa.Boolean(), nullable=False),
    sa.Column("effect_unknown", sa.Boolean(), nullable=False),
    sa.Column("result", Document, nullable=True),
    sa.Column("error", Document, nullable=True),
    sa.Column("current_attempt_id", sa.String(_ID), nullable=True),
    sa.Column("cancel_requested", sa.Boolean(), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    # The claim query: equality on the first four, range and order on available_at.
    sa.Index(
        "ix_weave_tasks_claim",
        "namespace", "queue", "status", "gate_open", "available_at", "task_id",
    ),
    # The lease sweep: unsettled tasks by the next instant they need a look.
    sa.Index("ix_weave_tasks_timeout", "timeout_at", "task_id"),
    # Gate changes copy the flag onto the gate's unsettled tasks.
    sa.Index("ix_weave_tasks_gate", "gate_id", "status"),
    sa.Index("ix_weave_tasks_owner", "namespace", "owner_id"),
    **TABLE_OPTIONS,
)

# One row per attempt (claim). ``report_hash`` identifies the report this attempt made,
# so a duplicate report with the same content is a replay and a different one a conflict.
weave_task_attempts = sa.Table(
    "weave_task_attempts",
    metadata,
    sa.Column("attempt_id", sa.String(_ID), primary_key=True),
    sa.Column("task_id", sa.String(_ID), nullable=False),
    sa.Column("namespace", sa.String(_NAME), nullable=False),
    sa.Column("attempt_no", sa.Integer(), nullable=False),
    sa.Column("worker_id", sa.String(255), nullable=False),
    sa.Column("started_at", Timestamp, nullable=False),
    sa.Column("lease_expires_at", Timestamp, nullable=False),
    sa.Column("close_by", Timestamp, nullable=True),
    sa.Column("heartbeat_at", Timestamp, nullable=True),
    sa.Column("finished_at", Timestamp, nullable=True),
    sa.Column("outcome", sa.String(32), nullable=True),
    sa.Column("report_hash", sa.CHAR(64), nullable=True),
    sa.UniqueConstraint("task_id", "attempt_no", name="uq_weave_task_attempts_no"),
    **TABLE_OPTIONS,
)

# Every status change of a task (and every refused report), in order.
weave_task_events = sa.Table(
    "weave_task_events",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("namespace", sa.String(_NAME), nullable=False),
    sa.Column("task_id", sa.String(_ID), nullable=False),
    sa.Column("revision", sa.Integer(), nullable=False),
    sa.Column("event_type", sa.String(64), nullable=False),
    sa.Column("attempt_id", sa.String(_ID), nullable=True),
    sa.Column("occurred_at", Timestamp, nullable=False),
    sa.Column("payload", Document, nullable=True),
    sa.Index("ix_weave_task_events_task", "task_id", "id"),
    **TABLE_OPTIONS,
)

# The result inbox: one row per delivered workflow task event, with the frozen
# snapshot the consumer reads instead of the task's current state.
weave_inbox = sa.Table(
    "weave_inbox",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("namespace", sa.String(_NAME), nullable=False),
    sa.Column("event_id", sa.String(_NAME), nullable=False),
    sa.Column("event_type", sa.String(32), nullable=False),
    sa.Column("source_task_id", sa.String(_ID), nullable=False),
    sa.Column("source_activation_id", sa.String(_ID), nullable=False),
    sa.Column("source_revision", sa.Integer(), nullable=False),
    sa.Column("snapshot", Document, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("available_at", Timestamp, nullable=False),
    sa.Column("row_version", sa.Integer(), nullable=False),
    sa.Column("error_code", sa.String(64), nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("processed_at", Timestamp, nullable=True),
    sa.UniqueConstraint("namespace", "event_id", name="uq_weave_inbox_event"),
    sa.UniqueConstraint(
        "namespace", "source_task_id", "source_revision", name="uq_weave_inbox_source"
    ),
    sa.CheckConstraint("source_revision > 0", name="ck_weave_inbox_source_revision"),
    sa.Index("ix_weave_inbox_due", "state", "available_at", "namespace", "id"),
    **TABLE_OPTIONS,
)

# Workflow step activations: the minimal shape the dispatch layer verifies a workflow
# task's owner against (the runtime issue extends it).
weave_activations = sa.Table(
    "weave_activations",
    metadata,
    sa.Column("activation_id", sa.String(_ID), primary_key=True),
    sa.Column("namespace", sa.String(_NAME), nullable=False),
    sa.Column("instance_id", sa.String(_ID), nullable=False),
    sa.Column("step_id", sa.String(_NAME), nullable=False),
    sa.Column("state", sa.String(32), nullable=False),
    sa.Column("state_version", sa.Integer(), nullable=False),
    sa.Column("task_id", sa.String(_ID), nullable=True),
    sa.Column("poll_round", sa.Integer(), nullable=True),
    sa.Column("gate_id", sa.String(_ID), nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Index("ix_weave_activations_instance", "namespace", "instance_id"),
    **TABLE_OPTIONS,
)

DISPATCH_TABLES: Final = (
    weave_queues,
    weave_namespace_quotas,
    weave_capacity_releases,
    weave_execution_gates,
    weave_tasks,
    weave_task_attempts,
    weave_task_events,
    weave_inbox,
    weave_activations,
)

# --- runtime (issue 5): instances, steps, idempotency, pending advances, history ------

# One workflow instance. ``revision`` rises by one with every recorded transition;
# ``root_version`` with every advance that changed structure (the checkpoint fence, R-6.4);
# ``control_version`` with every control (pause/resume/cancel, issue 7). ``queues`` is the
# sorted JSON list of the queues the pinned version uses (locked in that order, R-6.2).
weave_instances = sa.Table(
    "weave_instances",
    metadata,
    sa.Column("instance_id", sa.String(_ID), primary_key=True),
    sa.Column("namespace", sa.String(_NAME), nullable=False),
    sa.Column("definition_id", sa.String(_NAME), nullable=False),
    sa.Column("version", sa.String(_NAME), nullable=False),
    sa.Column("content_hash", sa.CHAR(64), nullable=False),
    sa.Column("input", Document, nullable=False),
    sa.Column("queues", sa.String(4096), nullable=False),
    sa.Column("failure_policy", sa.String(32), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("paused", sa.Boolean(), nullable=False),
    sa.Column("control_version", sa.Integer(), nullable=False),
    sa.Column("revision", sa.BigInteger(), nullable=False),
    sa.Column("root_version", sa.Integer(), nullable=False),
    sa.Column("gate_id", sa.String(_ID), nullable=False),
    sa.Column("deadline_at", Timestamp, nullable=False),
    sa.Column("output", Document, nullable=True),
    sa.Column("review_reason", sa.String(128), nullable=True),
    sa.Column("operation_type", sa.String(64), nullable=False),
    sa.Column("idempotency_key", sa.String(255), nullable=False),
    sa.Column("created_by", sa.String(255), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.Column("settled_at", Timestamp, nullable=True),
    # The effective configuration frozen at start: its hash in weave_instance_configs (0007).
    sa.Column("config_hash", sa.CHAR(64), nullable=True),
    sa.Index("ix_weave_instances_created", "namespace", "created_at", "instance_id"),
    sa.Index("ix_weave_instances_status", "namespace", "status", "created_at", "instance_id"),
    # The retention purge: settled instances of a namespace, oldest first (0006).
    sa.Index("ix_weave_instances_settled", "namespace", "settled_at", "instance_id"),
    sa.Index(
        "ix_weave_instances_definition",
        "namespace", "definition_id", "version", "created_at", "instance_id",
    ),
    **TABLE_OPTIONS,
)

# Idempotency of starts: one row per (namespace, operation type, key), holding the
# hash of the canonical request and the instance it created.
weave_idempotency = sa.Table(
    "weave_idempotency",
    metadata,
    sa.Column("namespace", sa.String(_NAME), primary_key=True),
    sa.Column("operation_type", sa.String(64), primary_key=True),
    sa.Column("idempotency_key", sa.String(255), primary_key=True),
    sa.Column("request_hash", sa.CHAR(64), nullable=False),
    sa.Column("instance_id", sa.String(_ID), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    **TABLE_OPTIONS,
)

# The saved state of every activated step: phase, output (SUCCEEDED only), a
# composite's decision, its state version and its current activation.
weave_steps = sa.Table(
    "weave_steps",
    metadata,
    sa.Column("instance_id", sa.String(_ID), primary_key=True),
    sa.Column("step_id", sa.String(_NAME), primary_key=True),
    sa.Column("namespace", sa.String(_NAME), nullable=False),
    sa.Column("phase", sa.String(16), nullable=False),
    sa.Column("version", sa.Integer(), nullable=False),
    sa.Column("output", Document, nullable=True),
    sa.Column("decision", Document, nullable=True),
    sa.Column("activation_id", sa.String(_ID), nullable=True),
    sa.Column("reason", sa.String(128), nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    **TABLE_OPTIONS,
)

# The due index of deferred advances: ROOT checkpoints and retries after a full
# queue or quota, instance deadlines, and (issue 6) timers, poll wake-ups and signal
# deliveries. One row per (instance, kind, ref), reused: ``version`` rises with every
# change so a stale scanner's update never overwrites a newer one.
weave_pending_advances = sa.Table(
    "weave_pending_advances",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("namespace", sa.String(_NAME), nullable=False),
    sa.Column("instance_id", sa.String(_ID), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("ref", sa.String(_ID), nullable=False),
    sa.Column("due_at", Timestamp, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("version", sa.Integer(), nullable=False),
    sa.Column("reason", sa.String(64), nullable=False),
    sa.Column("root_version", sa.Integer(), nullable=False),
    sa.Column("root_identity", sa.String(2 * _NAME + 1), nullable=False),
    sa.Column("attempts", sa.Integer(), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.UniqueConstraint("instance_id", "kind", "ref", name="uq_weave_pending_advances_ref"),
    sa.Index("ix_weave_pending_advances_due", "state", "due_at", "id"),
    **TABLE_OPTIONS,
)

# The ordered history of an instance: one row per recorded transition, numbered
# by the instance revision it took; ``audit_id`` is the audit row of its transaction.
weave_transitions = sa.Table(
    "weave_transitions",
    metadata,
    sa.Column("instance_id", sa.String(_ID), primary_key=True),
    sa.Column("revision", sa.BigInteger(), primary_key=True, autoincrement=False),
    sa.Column("namespace", sa.String(_NAME), nullable=False),
    sa.Column("occurred_at", Timestamp, nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("step_id", sa.String(_NAME), nullable=True),
    sa.Column("activation_id", sa.String(_ID), nullable=True),
    sa.Column("from_state", sa.String(32), nullable=True),
    sa.Column("to_state", sa.String(32), nullable=True),
    sa.Column("reason", sa.String(128), nullable=True),
    sa.Column("details", Document, nullable=True),
    sa.Column("operation_id", sa.String(64), nullable=False),
    sa.Column("audit_id", sa.BigInteger(), nullable=True),
    **TABLE_OPTIONS,
)

# The runtime's columns on the dispatch layer's ``weave_activations`` (nullable, so the
# dispatch layer's own minimal rows stay valid): the step kind, the command the decision
# core returned, the revision of the result consumed, the review/failure reason.
ACTIVATION_COLUMNS: tuple[sa.Column[Any], ...] = (
    sa.Column("kind", sa.String(32), nullable=True),
    sa.Column("command", Document, nullable=True),
    sa.Column("result_revision", sa.Integer(), nullable=True),
    sa.Column("reason", sa.String(128), nullable=True),
    sa.Column("updated_at", Timestamp, nullable=True),
    sa.Column("settled_at", Timestamp, nullable=True),
)
for _column in ACTIVATION_COLUMNS:  # extend, never rewrite, the dispatch table
    weave_activations.append_column(_column)

RUNTIME_TABLES: Final = (
    weave_instances,
    weave_idempotency,
    weave_steps,
    weave_pending_advances,
    weave_transitions,
)

__all__ = [
    "ACTIVATION_COLUMNS",
    "DISPATCH_TABLES",
    "NAME_LENGTH",
    "RUNTIME_TABLES",
    "TABLE_OPTIONS",
    "BigId",
    "Document",
    "Timestamp",
    "metadata",
    "weave_activations",
    "weave_api_tokens",
    "weave_audit",
    "weave_capacity_releases",
    "weave_clock",
    "weave_definitions",
    "weave_execution_gates",
    "weave_idempotency",
    "weave_inbox",
    "weave_instances",
    "weave_namespace_quotas",
    "weave_namespaces",
    "weave_pending_advances",
    "weave_queues",
    "weave_steps",
    "weave_task_attempts",
    "weave_task_events",
    "weave_tasks",
    "weave_transitions",
]

# --- durable waits (issue 6): wait records, signals, poll rounds ---------------------

# One wait record per waiting activation (signal, timer, poll). Signal, timeout, cancel,
# receipt and poll result race on ``version``: the one version-checked
# UPDATE that moves ``state`` from OPEN wins, and ``winner`` says which fact it was.
weave_waits = sa.Table(
    "weave_waits",
    metadata,
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
    sa.Column("opened_at", Timestamp, nullable=False),
    sa.Column("due_at", Timestamp, nullable=True),
    sa.Column("deadline_at", Timestamp, nullable=True),
    sa.Column("max_rounds", sa.Integer(), nullable=True),
    sa.Column("interval_seconds", sa.Integer(), nullable=True),
    sa.Column("current_round", sa.Integer(), nullable=False),
    sa.Column("next_round_at", Timestamp, nullable=True),
    sa.Column("last_status", sa.String(16), nullable=True),
    sa.Column("last_result", Document, nullable=True),
    sa.Column("winner", sa.String(32), nullable=True),
    sa.Column("winner_ref", sa.String(_NAME), nullable=True),
    sa.Column("reason", sa.String(128), nullable=True),
    sa.Column("settled_at", Timestamp, nullable=True),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.Index("ix_weave_waits_instance", "instance_id", "state"),
    **TABLE_OPTIONS,
)

# Accepted signals: unique per (namespace, signal_id); ``target_activation_id`` is
# the open wait the signal matched when it was accepted (NULL: an early signal, consumed by
# the next matching wait). ``accepted_at`` (database time) decides "on time".
weave_signals = sa.Table(
    "weave_signals",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("namespace", sa.String(_NAME), nullable=False),
    sa.Column("signal_id", sa.String(_NAME), nullable=False),
    sa.Column("instance_id", sa.String(_ID), nullable=False),
    sa.Column("name", sa.String(_NAME), nullable=False),
    sa.Column("correlation_key", sa.String(256), nullable=False),
    sa.Column("param_version", sa.String(_NAME), nullable=False),
    sa.Column("payload", Document, nullable=True),
    sa.Column("evidence", Document, nullable=True),
    sa.Column("content_hash", sa.CHAR(64), nullable=False),
    sa.Column("accepted_by", sa.String(255), nullable=False),
    sa.Column("accepted_at", Timestamp, nullable=False),
    sa.Column("expires_at", Timestamp, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("version", sa.Integer(), nullable=False),
    sa.Column("target_activation_id", sa.String(_ID), nullable=True),
    sa.Column("consumed_by_activation_id", sa.String(_ID), nullable=True),
    sa.Column("settled_at", Timestamp, nullable=True),
    sa.Column("reason", sa.String(128), nullable=True),
    sa.UniqueConstraint("namespace", "signal_id", name="uq_weave_signals_id"),
    sa.Index(
        "ix_weave_signals_match",
        "instance_id", "state", "name", "correlation_key", "param_version", "accepted_at", "id",
    ),
    sa.Index("ix_weave_signals_expiry", "state", "expires_at", "id"),
    **TABLE_OPTIONS,
)

# Poll rounds: exactly one task per (namespace, instance, activation, round).
weave_poll_rounds = sa.Table(
    "weave_poll_rounds",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("namespace", sa.String(_NAME), nullable=False),
    sa.Column("instance_id", sa.String(_ID), nullable=False),
    sa.Column("activation_id", sa.String(_ID), nullable=False),
    sa.Column("round", sa.Integer(), nullable=False),
    sa.Column("task_id", sa.String(_ID), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("status", sa.String(32), nullable=True),
    sa.Column("result", Document, nullable=True),
    sa.Column("inbox_id", sa.BigInteger(), nullable=True),
    sa.Column("result_accepted_at", Timestamp, nullable=True),
    sa.Column("classification", sa.String(64), nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("settled_at", Timestamp, nullable=True),
    sa.UniqueConstraint(
        "namespace", "instance_id", "activation_id", "round", name="uq_weave_poll_rounds_round"
    ),
    sa.UniqueConstraint("task_id", name="uq_weave_poll_rounds_task"),
    **TABLE_OPTIONS,
)

WAIT_TABLES: Final = (weave_waits, weave_signals, weave_poll_rounds)

__all__ += ["WAIT_TABLES", "weave_poll_rounds", "weave_signals", "weave_waits"]

# --- controls (issue 7): operations of operators ---------------------------------------

# One row per accepted control or review operation (pause, resume, cancel, review
# conclusions, resolve, recover), unique per (namespace, operation_id): the operator
# (``actor``), the reason, the version it expected, what it concerned and the response
# body of its first outcome (a repeat of the id returns it, R-8.1).
weave_operations = sa.Table(
    "weave_operations",
    metadata,
    sa.Column("namespace", sa.String(_NAME), primary_key=True),
    sa.Column("operation_id", sa.String(64), primary_key=True),
    sa.Column("instance_id", sa.String(_ID), nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("actor", sa.String(255), nullable=False),
    sa.Column("reason", sa.String(1024), nullable=False),
    sa.Column("expected_version", sa.Integer(), nullable=True),
    sa.Column("step_id", sa.String(_NAME), nullable=True),
    sa.Column("activation_id", sa.String(_ID), nullable=True),
    sa.Column("new_activation_id", sa.String(_ID), nullable=True),
    sa.Column("conclusion", sa.String(64), nullable=True),
    sa.Column("evidence", Document, nullable=True),
    sa.Column("request_hash", sa.CHAR(64), nullable=False),
    sa.Column("outcome", Document, nullable=False),
    sa.Column("revision", sa.BigInteger(), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Index("ix_weave_operations_instance", "namespace", "instance_id", "created_at"),
    **TABLE_OPTIONS,
)

__all__ += ["weave_operations"]

# --- visibility (issue 12) ------------------------------------------------------------

# Which workers asked for which (queue, handler, version) in their claim requests, and
# when last: kept in each process's memory and upserted at most every few seconds per
# process, never inside a claim or step transaction (dispatch/sightings.py). The primary
# key is the lookup of a pending task's handler (namespace, queue, handler, version).
weave_worker_sightings = sa.Table(
    "weave_worker_sightings",
    metadata,
    sa.Column("namespace", sa.String(_NAME), primary_key=True),
    sa.Column("queue", sa.String(_NAME), primary_key=True),
    sa.Column("handler", sa.String(_NAME), primary_key=True),
    sa.Column("handler_version", sa.String(_NAME), primary_key=True),
    sa.Column("worker_id", sa.String(255), primary_key=True),
    sa.Column("last_seen_at", Timestamp, nullable=False),
    **TABLE_OPTIONS,
)

__all__ += ["weave_worker_sightings"]

# --- review (issue 12): the effective configuration frozen at start --------------------

# Each distinct effective configuration (limits and resolved defaults, canonical exact
# JSON) once, under its content hash; ``weave_instances.config_hash`` names an instance's.
weave_instance_configs = sa.Table(
    "weave_instance_configs",
    metadata,
    sa.Column("config_hash", sa.CHAR(64), primary_key=True),
    sa.Column("config", Document, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    **TABLE_OPTIONS,
)

__all__ += ["weave_instance_configs"]
