"""The engine's Prometheus metrics: every counter, gauge and histogram the kernel records.

Defined once per process on prometheus_client's default registry (``weave serve
--workers N`` sets ``PROMETHEUS_MULTIPROC_DIR`` first, so each process writes its own
files and any one of them serves the sum; docs/observability.md). The kernel changes
counters only through ``weave_core.observability.observe`` (after COMMIT, so rolled-back
work is never
counted) or outside any transaction (retries, tick rounds, lease sweeps). The HTTP metrics
are ``weave_http.metrics``'; the gauges that need a query (instances by status, lags) are
collected at scrape time by ``weave_http.metrics`` too.
"""

from __future__ import annotations

from typing import Any, Final

from prometheus_client import Counter, Gauge, Histogram

# Latency buckets from 1 ms to a minute: a step's engine gap is milliseconds, a queue wait
# can be minutes when workers are few.
LATENCY_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                          2.5, 5.0, 10.0, 30.0, 60.0)

INSTANCES_STARTED: Final = Counter(
    "weave_instances_started", "Workflow instances started", ["namespace"])
INSTANCES_FINISHED: Final = Counter(
    "weave_instances_finished", "Workflow instances that reached a terminal status",
    ["namespace", "status"])
STEPS: Final = Counter(
    "weave_steps", "Step transitions: activated (created), succeeded, failed, skipped, "
    "cancelled, needs_review, recovered", ["event"])
TASKS: Final = Counter(
    "weave_tasks", "Task status events: created, started, succeeded, failed, "
    "retry_scheduled (retried), cancelled, needs_review, report_refused", ["event"])
REVIEWS_OPENED: Final = Counter(
    "weave_reviews_opened", "Instances sent to NEEDS_REVIEW, by reason", ["reason"])
QUARANTINES: Final = Counter(
    "weave_results_quarantined", "Task results quarantined instead of consumed", ["reason"])
LEASE_EXPIRIES: Final = Counter(
    "weave_lease_expiries", "Tasks the lease sweep settled or rescheduled, by outcome",
    ["outcome"])
CONSUME_DEFERRALS: Final = Counter(
    "weave_consume_deferrals", "Inbox rows whose consumption failed and was put off 30 s")
TRANSACTION_RETRIES: Final = Counter(
    "weave_transaction_retries", "Transactions re-run on a deadlock, lock wait timeout, lost "
    "connection or busy SQLite, by transaction name and reason", ["transaction", "reason"])
CAPACITY_RERUNS: Final = Counter(
    "weave_capacity_reruns", "Transactions run again with the quota and queue locks taken in "
    "order: a step whose capacity change could not net or found no release shard free, a "
    "start that needed more units than were free", ["transaction"])
TRANSACTION_SECONDS: Final = Histogram(
    "weave_transaction_duration_seconds", "Named transactions, retries included",
    ["transaction"], buckets=LATENCY_BUCKETS)
ENGINE_GAP: Final = Histogram(
    "weave_engine_gap_seconds", "A task result accepted until its successor task is "
    "claimable (database time between them plus the creating transaction's run)",
    buckets=LATENCY_BUCKETS)
QUEUE_WAIT: Final = Histogram(
    "weave_queue_wait_seconds", "A task due (created, or its retry due) until a claim "
    "started it", ["queue"], buckets=LATENCY_BUCKETS)
TICK_SECONDS: Final = Histogram(
    "weave_tick_duration_seconds", "One tick round (due inbox rows, pending advances, "
    "lease sweep, signal expiry)", buckets=LATENCY_BUCKETS)
LONG_POLL_WAITERS: Final = Gauge(
    "weave_long_poll_waiters", "Requests waiting in a long poll now (claim or result)",
    ["kind"], multiprocess_mode="livesum")

_children: dict[tuple[Any, ...], Any] = {}


def child(metric: Any, *values: str) -> Any:
    """``metric.labels(*values)``, remembered: a step records a handful of labelled values,
    and prometheus_client's ``labels`` costs four times the increment it precedes. The
    label values are few (event kinds, namespaces, queues, transaction names)."""
    key = (metric, *values)
    found = _children.get(key)
    if found is None:
        found = _children[key] = metric.labels(*values)
    return found


__all__ = [
    "CAPACITY_RERUNS",
    "CONSUME_DEFERRALS",
    "ENGINE_GAP",
    "INSTANCES_FINISHED",
    "INSTANCES_STARTED",
    "LATENCY_BUCKETS",
    "LEASE_EXPIRIES",
    "LONG_POLL_WAITERS",
    "QUARANTINES",
    "QUEUE_WAIT",
    "REVIEWS_OPENED",
    "STEPS",
    "TASKS",
    "TICK_SECONDS",
    "TRANSACTION_RETRIES",
    "TRANSACTION_SECONDS",
    "child",
]
