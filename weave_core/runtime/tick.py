"""The tick (R-6.1): every engine process, each second, works through due rows.

:func:`run_tick` reads up to ``max_candidates`` due rows from the two due indexes — PENDING
inbox rows by ``available_at`` (``ix_weave_inbox_due``) and PENDING pending advances by
``due_at`` (``ix_weave_pending_advances_due``) — and handles inbox rows one per transaction
(:func:`~weave_core.runtime.consumer.consume`) and pending advances in batches of one
namespace per transaction (:func:`~weave_core.runtime.checkpoints.run_pending_batch`), until
the time budget is spent. Being selected grants nothing: each transaction re-reads and
locks. :class:`TickLoop` runs it every second on a background thread (``weave serve``);
the process that accepts a task result consumes it at once, so the tick is a safety net.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.dispatch.leases import sweep_expired_leases
from weave_core.dispatch.model import InboxState
from weave_core.engine import Engine
from weave_core.observability import tracing
from weave_core.observability.metrics import TICK_SECONDS
from weave_core.runtime.checkpoints import DEFAULT_BATCH, run_pending_batch
from weave_core.runtime.consumer import consume
from weave_core.runtime.pending import PendingState
from weave_core.runtime.retention import purge_if_due
from weave_core.runtime.waits.signal_expiry import expire_signals
from weave_core.storage.schema import weave_inbox, weave_pending_advances

logger = logging.getLogger(__name__)

DEFAULT_MAX_CANDIDATES: Final = 256
"""Due rows one tick reads: eight batches of pending rows. A wider window than the
batches one engine needs lets engines whose ticks read the same oldest rows start at
different batches (a burst drained by several engines collides less)."""
DEFAULT_BUDGET_S: Final = 5.0
DEFAULT_INTERVAL_S: Final = 1.0


@dataclass
class TickReport:
    """What one tick did, by outcome (``consumed``, ``ignored``, ``advanced`` …)."""

    candidates: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    out_of_budget: bool = False

    def count(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1


def due_candidates(conn: Connection, engine: Engine, limit: int) -> tuple[list[int], list[int]]:
    """Due inbox ids and pending-advance ids, oldest first, each read through its index."""
    now = engine.db.now(conn)
    i = weave_inbox
    inbox = [int(x) for x in conn.execute(
        sa.select(i.c.id)
        .where(i.c.state == InboxState.PENDING.value, i.c.available_at <= now)
        .order_by(i.c.available_at, i.c.namespace, i.c.id)
        .limit(limit)
    ).scalars()]
    p = weave_pending_advances
    pending = [int(x) for x in conn.execute(
        sa.select(p.c.id)
        .where(p.c.state == PendingState.PENDING.value, p.c.due_at <= now)
        .order_by(p.c.due_at, p.c.id)
        .limit(limit)
    ).scalars()]
    return inbox, pending


def run_tick(
    engine: Engine,
    *,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    budget_s: float = DEFAULT_BUDGET_S,
    stop: threading.Event | None = None,
) -> TickReport:
    """One tick: up to ``max_candidates`` due rows, one transaction each, within ``budget_s``.

    Inbox rows and pending advances alternate, so neither index starves the other. A
    candidate that fails is logged and deferred 30 s (keyed on its row version). ``stop``
    set ends the tick between two candidates (never inside a transaction).
    """
    report = TickReport()
    started = time.monotonic()  # a work budget, never a business decision
    inbox, pending = engine.db.read(
        lambda conn: due_candidates(conn, engine, max_candidates), name="tick_candidates"
    )
    # Interleaved, so a backlog of one index never starves the other: a batch of pending
    # rows (one transaction, DEFAULT_BATCH instances), then as many inbox rows. Engines
    # read the same oldest rows, so each starts at a random chunk and wraps around: two
    # ticks then mostly work on different rows instead of skipping each other's
    # (a batch skips instances another holds; an inbox row waits for its lock).
    chunks = range(0, max(len(inbox), len(pending)), DEFAULT_BATCH)
    first = random.randrange(len(chunks)) if chunks else 0
    work: list[tuple[str, list[int]]] = []
    for n in [*chunks[first:], *chunks[:first]]:
        work += [("pending", pending[n:n + DEFAULT_BATCH])] if n < len(pending) else []
        work += [("inbox", [row_id]) for row_id in inbox[n:n + DEFAULT_BATCH]]
    for source, row_ids in work:
        if time.monotonic() - started > budget_s:
            report.out_of_budget = True
            break
        if stop is not None and stop.is_set():
            break
        report.candidates += len(row_ids)
        try:
            if source == "inbox":
                report.count(consume(engine, row_ids[0]).outcome.value)
            else:
                for result in run_pending_batch(engine, row_ids):
                    report.count(result.outcome)
        except Exception:
            logger.exception("tick: %s rows %s failed; left for a later tick", source, row_ids)
            report.count("failed")
    if not report.out_of_budget:
        # Expired leases: a worker that died (or a claim whose reply was lost) holds its
        # task only until the lease ends; then it is retried or goes to review.
        try:
            swept = sweep_expired_leases(engine, limit=max_candidates)
        except Exception:
            logger.exception("tick: lease sweep failed; retried next tick")
        else:
            if swept.handled:
                report.outcomes["leases_expired"] = len(swept.handled)
            if swept.deferred:
                report.outcomes["leases_deferred"] = len(swept.deferred)
    if not report.out_of_budget:
        try:
            expired = expire_signals(engine, limit=max_candidates)
        except Exception:
            logger.exception("tick: signal expiry failed; retried next tick")
        else:
            if expired.expired:
                report.outcomes["signals_expired"] = expired.expired
    if not report.out_of_budget:
        try:
            purged = purge_if_due(engine)
        except Exception:
            logger.exception("the retention purge failed; it runs again later")
        else:
            if purged is not None and purged.count:
                report.outcomes["instances_purged"] = purged.count
    return report


class TickLoop:
    """Runs :func:`run_tick` every ``interval_s`` on a daemon thread until :meth:`stop`."""

    def __init__(
        self,
        engine: Engine,
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        max_candidates: int = DEFAULT_MAX_CANDIDATES,
        budget_s: float = DEFAULT_BUDGET_S,
    ) -> None:
        self.engine = engine
        self.interval_s = interval_s
        self.max_candidates = max_candidates
        self.budget_s = budget_s
        self.ticks = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, name=f"weave-tick-{self.engine.node_id}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop after the current candidate's transaction (never mid-transaction)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            busy = False
            try:
                with tracing.span("weave.tick", {"weave.node": self.engine.node_id}):
                    report = run_tick(self.engine, max_candidates=self.max_candidates,
                                      budget_s=self.budget_s, stop=self._stop)
                busy = report.out_of_budget or report.candidates >= self.max_candidates
            except Exception:
                logger.exception("tick failed; the next one runs in %.1f s", self.interval_s)
            TICK_SECONDS.observe(time.monotonic() - started)
            self.ticks += 1
            # A full tick leaves due rows behind: go again at once instead of waiting.
            pause = 0.0 if busy else self.interval_s - (time.monotonic() - started)
            self._stop.wait(max(0.0, pause))


__all__ = [
    "DEFAULT_BUDGET_S",
    "DEFAULT_INTERVAL_S",
    "DEFAULT_MAX_CANDIDATES",
    "TickLoop",
    "TickReport",
    "due_candidates",
    "run_tick",
]
