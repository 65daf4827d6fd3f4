"""What an operator sees of committed changes: counters, log lines and task trace roots.

The kernel hands this module the rows it writes anyway — an instance's transitions
(``History.write``) and task status events (``statements.append_row``) — plus two
timings (engine gap, queue wait). Nothing is counted or logged inside the transaction:
each notice becomes a ``weave_core.foundation.aftercommit.later`` callable, run once the transaction
committed and dropped when it (or its savepoint) rolls back. No statement is added.

Log lines about a workflow carry its ids as ``extra`` fields (``namespace``,
``workflow_id``, ``step``, ``activation``, ``task``, ``attempt``), which the text and JSON
formats of ``weave serve --log-format`` print.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Final

from sqlalchemy.engine import Connection

from weave_core.foundation.aftercommit import later
from weave_core.observability import tracing
from weave_core.observability.metrics import (
    CONSUME_DEFERRALS,
    ENGINE_GAP,
    INSTANCES_FINISHED,
    INSTANCES_STARTED,
    QUARANTINES,
    QUEUE_WAIT,
    REVIEWS_OPENED,
    STEPS,
    TASKS,
    child,
)

logger = logging.getLogger("weave_core.workflows")

_TERMINAL: Final = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
_TXN_STARTED: Final = "weave_txn_started"  # weave_core.storage.db.TXN_STARTED (no import cycle)


REQUEST_IDS: Final[contextvars.ContextVar[dict[str, str] | None]] = contextvars.ContextVar(
    "weave_request_ids", default=None)
"""The ids of the request being served (its path's namespace, workflow, task): the log
filter of ``weave serve`` adds them to every line logged while serving it."""


def ids(namespace: str | None = None, workflow_id: str | None = None, *,
        step: str | None = None, activation: str | None = None, task: str | None = None,
        attempt: str | None = None) -> dict[str, str]:
    """The ``extra`` of a log line: the ids that are known."""
    found = dict(namespace=namespace, workflow_id=workflow_id, step=step,
                 activation=activation, task=task, attempt=attempt)
    return {k: v for k, v in found.items() if v is not None}


# --- transitions -----------------------------------------------------------------------


def transitions_txn(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Inside a transaction: count and log ``rows`` (an instance's transitions) after it
    commits."""
    later(conn, lambda: _transitions(rows))


def _transitions(rows: Sequence[dict[str, Any]]) -> None:
    debug = logger.isEnabledFor(logging.DEBUG)
    for row in rows:
        kind: str = row["kind"]
        if kind.startswith("step."):
            child(STEPS, kind[5:]).inc()
            if debug or kind == "step.failed":
                logger.log(logging.INFO if kind == "step.failed" else logging.DEBUG,
                           "%s %s", kind, row["reason"] or "", extra=_row_ids(row))
        elif kind == "instance.created":
            child(INSTANCES_STARTED, row["namespace"]).inc()
            logger.info("workflow started", extra=_row_ids(row))
        elif kind == "instance.status":
            status = row["to_state"]
            if status in _TERMINAL:
                child(INSTANCES_FINISHED, row["namespace"], status).inc()
                logger.info("workflow %s", status.lower(), extra=_row_ids(row))
            elif status == "NEEDS_REVIEW":
                reason = str(row["reason"] or "unknown")
                child(REVIEWS_OPENED, reason.split(":", 1)[0]).inc()
                logger.warning("review opened: %s", reason, extra=_row_ids(row))
        elif kind == "result.quarantined":
            child(QUARANTINES, str(row["reason"])).inc()
            logger.warning("result quarantined: %s", row["reason"], extra=_row_ids(row))


def _row_ids(row: dict[str, Any]) -> dict[str, str]:
    return ids(row["namespace"], row["instance_id"], step=row["step_id"],
               activation=row["activation_id"])


# --- task events -----------------------------------------------------------------------


def task_event_txn(conn: Connection, row: dict[str, Any]) -> None:
    """Inside a transaction: count (and trace, and log) one ``weave_task_events`` row
    after it commits."""
    later(conn, lambda: _task_event(row))


def _task_event(row: dict[str, Any]) -> None:
    event: str = row["event_type"][5:]  # "task.created" → "created"
    child(TASKS, event).inc()
    if event == "created":
        tracing.task_created(row["task_id"], {"weave.namespace": row["namespace"]})
    elif event in ("retry_scheduled", "failed", "needs_review"):
        level = logging.WARNING if event == "needs_review" else logging.INFO
        logger.log(level, "task %s", event.replace("_", " "),
                   extra=ids(row["namespace"], task=row["task_id"], attempt=row["attempt_id"]))


def note_deferred(inbox_id: int, extra: dict[str, str]) -> None:
    """After a consumption failed and its row was put off (its own transactions)."""
    CONSUME_DEFERRALS.inc()
    logger.warning("result consumption deferred 30 s (inbox row %s)", inbox_id, extra=extra)


# --- timings ---------------------------------------------------------------------------


def engine_gap_txn(conn: Connection, accepted_ago: timedelta) -> None:
    """Inside the transaction that makes a successor task claimable: its result was
    accepted ``accepted_ago`` (database time) before this transaction's clock; the gap
    observed adds the transaction's own run until its commit."""
    started = conn.info.get(_TXN_STARTED)
    base = max(0.0, accepted_ago.total_seconds())

    def _observe() -> None:
        ran = 0.0 if started is None else time.perf_counter() - started
        ENGINE_GAP.observe(base + ran)

    later(conn, _observe)


def queue_wait_txn(conn: Connection, queue: str, waited: timedelta) -> None:
    """Inside a claim: the task had been due for ``waited`` (counted after the commit)."""
    seconds = max(0.0, waited.total_seconds())
    later(conn, lambda: child(QUEUE_WAIT, queue).observe(seconds))


__all__ = [
    "REQUEST_IDS",
    "engine_gap_txn", "ids", "note_deferred", "queue_wait_txn", "task_event_txn",
    "transitions_txn",
]
