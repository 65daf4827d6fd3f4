"""Continuing a pending advance: ROOT checkpoints and retries, deadlines, timers (R-6.4).

:func:`run_pending` handles one ``weave_pending_advances`` row in its own transaction:
the row is read unlocked to learn its instance, the chain is taken in order, and the row
is locked last and re-checked (still PENDING, still due). Then:

- ``ROOT`` / ``""``: a checkpoint or a full-queue retry. A checkpoint naming another
  definition version (wrong root identity) or a root version ahead of the instance is
  refused (the instance goes to review); a stale one recomputes from the locked snapshot.
- ``ROOT`` / ``"deadline"``: the instance deadline (R-6.7): past it, an unfinished
  instance goes to review.
- ``TIMER`` / activation: the timer's step settles and the instance advances.

A retry that changes nothing (the queue or quota is still full) writes no audit and no
history: only the row's due time moves (R-6.5).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.engine import Engine
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.faults import fault_point
from weave_core.planning.program import Program
from weave_core.planning.snapshot import Phase
from weave_core.plugins.nodespec import Fact, FactKind, StepOutcome
from weave_core.runtime.advance import advance_txn
from weave_core.runtime.consumer import RETRY_DELAY
from weave_core.runtime.history import UNREAD, History, HistoryBatch, Unread, previous_times
from weave_core.runtime.instances import ActivationState, ReviewReason, new_operation_id
from weave_core.runtime.pending import (
    DEADLINE_REF,
    ROOT_REF,
    WAIT_KINDS,
    PendingKind,
    PendingState,
    finish_many_txn,
    finish_txn,
)
from weave_core.runtime.programs import programs
from weave_core.runtime.snapshot import LockedInstance, lock_chain, lock_chains
from weave_core.runtime.status import to_review
from weave_core.runtime.waits.due import wait_pending_txn
from weave_core.storage.locks import (
    holding,
    lock_activation,
    lock_activations,
    lock_pending_advance,
    lock_pending_advances,
    lock_waits,
)
from weave_core.storage.schema import (
    weave_activations,
    weave_instances,
    weave_pending_advances,
    weave_waits,
)
from weave_core.storage.statements import RowChanges, update_keyed

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PendingResult:
    pending_id: int
    outcome: str
    """``advanced``, ``unchanged`` (nothing to record), ``refused``, ``skipped``,
    ``deferred`` (failed; retried 30 s later), ``busy`` (a batch found its instance locked
    by another transaction and left the row due)."""
    instance_id: str | None = None


def _peek(conn: Connection, pending_id: int) -> Any:
    p = weave_pending_advances
    return conn.execute(
        sa.select(p.c.namespace, p.c.instance_id, p.c.state, p.c.version)
        .where(p.c.id == pending_id)
    ).one_or_none()


def _fire_timer(conn: Connection, engine: Engine, li: LockedInstance, history: History,
                program: Program, activation_id: str, now: Any, due_at: Any) -> None:
    act = lock_activation(conn, activation_id)
    if act is None or act.state != ActivationState.ACTIVE.value:
        return
    step = li.step(act.step_id)
    if step is None or step.activation_id != activation_id or step.phase is not Phase.ACTIVE:
        return
    result = program.interpret(act.step_id, Fact(FactKind.TIMER))
    phase = Phase.SUCCEEDED if result.outcome is StepOutcome.SUCCEEDED else Phase.NEEDS_REVIEW
    step.phase, step.version = phase, step.version + 1
    step.output = result.output if phase is Phase.SUCCEEDED else None
    step.reason = result.reason
    li.put_step(step)
    update_keyed(conn, weave_activations, {"activation_id": activation_id}, {
        "state": phase.value, "state_version": int(act.state_version) + 1,
        "reason": result.reason, "updated_at": now, "settled_at": now,
    })
    history.record(f"step.{phase.value.lower()}", step_id=act.step_id,
                   activation_id=activation_id, from_state=Phase.ACTIVE.value,
                   to_state=phase.value, reason=result.reason, details={"fact": "timer"})
    if phase is Phase.SUCCEEDED:
        # The timer's fact happened at its due time, however late the tick saw it.
        advance_txn(conn, engine, li, history, program, now=now, fact_at=due_at)
    else:
        to_review(conn, li, history, result.reason or "timer_review", now=now)


def _run_txn(conn: Connection, engine: Engine, pending_id: int, peek: Any) -> PendingResult:
    now = engine.db.now(conn)
    li = lock_chain(conn, peek.namespace, peek.instance_id)
    return _continue_txn(conn, engine, li, pending_id, peek.instance_id, now)


def _continue_txn(conn: Connection, engine: Engine, li: LockedInstance | None, pending_id: int,
                  instance_id: str, now: Any, *, previous: datetime | Unread | None = UNREAD,
                  histories: HistoryBatch | None = None, rows: RowChanges | None = None,
                  finished: bool = False) -> PendingResult:
    """The row's work, its instance's chain already locked (``li``; None if it is gone).

    In a batch, ``previous`` is the instance's last transition time read for the whole
    batch, ``histories`` collects the audit and transition rows and ``rows`` the step and
    instance rows to write at its end, and ``finished``: the batch already marked this row
    done (its version bumped by one).
    """
    row = lock_pending_advance(conn, pending_id)
    if row is None or row.state != PendingState.PENDING.value or row.due_at > now:
        return PendingResult(pending_id, "skipped")
    if not finished:
        finish_txn(conn, pending_id, int(row.version), PendingState.DONE, now)
    if li is None or li.terminal:
        return PendingResult(pending_id, "unchanged", instance_id)
    history = History(li.namespace, li.instance_id, li.revision, new_operation_id(), now,
                      previous_at=previous)
    program = programs(engine).for_instance(conn, li)
    metadata: dict[str, JSON] = {
        "source": {"checkpoint_id": pending_id, "kind": row.kind, "ref": row.ref},
        "node": engine.node_id, "reason": row.reason,
    }
    outcome = "advanced"
    kind = PendingKind(row.kind)
    if kind is PendingKind.ROOT and row.ref == ROOT_REF:
        refused = None
        if row.root_identity != li.root_identity:
            refused = "wrong_root_identity"
        elif int(row.root_version) > li.root_version:
            refused = "checkpoint_ahead"
        if refused is not None:
            finish_txn(conn, pending_id, int(row.version) + 1, PendingState.REFUSED, now)
            history.record("checkpoint.refused", reason=refused,
                           details={"checkpoint_id": pending_id,
                                    "root_version": int(row.root_version),
                                    "root_identity": row.root_identity})
            to_review(conn, li, history, ReviewReason.CHECKPOINT_REFUSED.value, now=now,
                      close_gate=True)
            outcome = "refused"
        else:
            advance_txn(conn, engine, li, history, program, now=now)
    elif kind is PendingKind.ROOT and row.ref == DEADLINE_REF:
        advance_txn(conn, engine, li, history, program, now=now)
    elif kind in WAIT_KINDS:
        if not wait_pending_txn(conn, engine, li, history, program, kind, row.ref, now) \
                and kind is PendingKind.TIMER:
            _fire_timer(conn, engine, li, history, program, row.ref, now,
                        row.due_at)  # an activation without a wait record
    if not history.changed:
        li.flush(conn, revision=li.revision, now=now, into=rows)
        return PendingResult(pending_id, "unchanged", li.instance_id)
    history.write(conn, actor=engine.actor, action="workflow.advanced", metadata=metadata,
                  batch=histories)
    li.flush(conn, revision=history.revision, now=now, into=rows)
    return PendingResult(pending_id, outcome, li.instance_id)


def _defer(engine: Engine, pending_id: int, version: int) -> None:
    """Move a failing row 30 s later, only if nobody changed it since ``version``."""

    def _move(conn: Connection) -> None:
        now = engine.db.now(conn)
        p = weave_pending_advances
        conn.execute(
            sa.update(p)
            .where(p.c.id == pending_id, p.c.state == PendingState.PENDING.value,
                   p.c.version == version)
            .values(due_at=now + RETRY_DELAY, version=version + 1, updated_at=now)
        )

    engine.db.transaction(_move, name="pending_defer")


def run_pending(engine: Engine, pending_id: int) -> PendingResult:
    """Continue one pending advance in its own transaction (any node, any number of times).

    A failure rolls the whole transaction back and moves the row 30 s later, keyed on its
    version (like an inbox row, R-5.4); the error is logged.
    """
    peek = engine.db.read(lambda conn: _peek(conn, pending_id), name="pending_peek")
    if peek is None or peek.state != PendingState.PENDING.value:
        return PendingResult(pending_id, "skipped")
    try:
        return engine.db.transaction(lambda conn: _run_txn(conn, engine, pending_id, peek),
                                     name="run_pending")
    except Exception:
        logger.exception("pending advance %s failed; retried in 30 s", pending_id)
        _defer(engine, pending_id, int(peek.version))
        return PendingResult(pending_id, "deferred", peek.instance_id)


DEFAULT_BATCH: Final = 32
"""Pending rows continued per transaction by :func:`run_pending_batch`: enough to share
the commit and the chain locks, few enough that the locks of one namespace are not held
long (a batch of instances that use queues holds the namespace quota row throughout)."""


def _peek_many(conn: Connection, pending_ids: Sequence[int]) -> list[Any]:
    """The rows still PENDING with their instance's unlocked namespace, queues and status."""
    p, i = weave_pending_advances, weave_instances
    return list(conn.execute(
        sa.select(p.c.id, p.c.namespace, p.c.instance_id, p.c.version,
                  i.c.namespace.label("instance_namespace"), i.c.queues, i.c.status)
        .select_from(p.outerjoin(i, i.c.instance_id == p.c.instance_id))
        .where(p.c.id.in_(sorted(set(pending_ids))), p.c.state == PendingState.PENDING.value)
    ).all())


def _batches(peeks: Sequence[Any], size: int) -> list[list[Any]]:
    """Group rows by namespace, at most ``size`` rows and one row per instance per batch
    (a second row of an instance waits for the next batch), instances in id order."""
    batches: list[list[Any]] = []
    by_namespace: dict[str, list[Any]] = {}
    for peek in sorted(peeks, key=lambda r: (r.namespace, r.instance_id, r.id)):
        by_namespace.setdefault(peek.namespace, []).append(peek)
    for rows in by_namespace.values():
        while rows:
            batch: dict[str, Any] = {}
            left: list[Any] = []
            for peek in rows:
                if peek.instance_id in batch or len(batch) >= size:
                    left.append(peek)
                else:
                    batch[peek.instance_id] = peek
            batches.append(sorted(batch.values(), key=lambda r: r.instance_id))
            rows = left
    return batches


def _run_batch_txn(conn: Connection, engine: Engine, batch: Sequence[Any]) -> list[PendingResult]:
    now = engine.db.now(conn)
    namespace = batch[0].namespace
    peeks = {r.instance_id: _InstancePeek(r.instance_namespace, r.queues, r.status)
             for r in batch if r.instance_namespace is not None}
    locked = lock_chains(conn, namespace, peeks, skip_busy=True)
    # A busy instance is another transaction's: its rows stay due for a later tick.
    chains, busy = locked.locked, locked.busy
    # The batch's level-6 rows in one locking read per table (in the order one row takes
    # them: pending row, activation, wait record), handed to each row's work below.
    mine = [int(r.id) for r in batch if r.instance_id in chains]
    rows = {int(r.id): r for r in lock_pending_advances(conn, mine)} if mine else {}
    refs = [r.ref for r in rows.values()
            if r.kind in WAIT_KINDS and r.state == PendingState.PENDING.value]
    activations = {a.activation_id: a for a in lock_activations(conn, refs)} if refs else {}
    waits = {w.activation_id: w for w in lock_waits(conn, refs)} if refs else {}
    previous = previous_times(conn, {iid: li.revision for iid, li in chains.items()})
    # Every due row is done whatever its work finds: mark them all in one UPDATE.
    due = {pid for pid, r in rows.items()
           if r.state == PendingState.PENDING.value and r.due_at <= now}
    finish_many_txn(conn, sorted(due), now)
    histories, changes = HistoryBatch(), RowChanges()
    with holding(conn, weave_pending_advances, rows), \
            holding(conn, weave_activations, activations), holding(conn, weave_waits, waits):
        results = [PendingResult(int(r.id), "busy", r.instance_id) if r.instance_id in busy
                   else _continue_txn(conn, engine, chains.get(r.instance_id), int(r.id),
                                      r.instance_id, now, previous=previous.get(r.instance_id),
                                      histories=histories, rows=changes,
                                      finished=int(r.id) in due)
                   for r in batch]
    changes.write(conn)
    fault_point("tick.batch.mid")  # the batch's rows written, its history not yet
    histories.write(conn)
    return results


@dataclass(frozen=True)
class _InstancePeek:
    namespace: str
    queues: str
    status: str


def run_pending_batch(engine: Engine, pending_ids: Sequence[int], *,
                      size: int = DEFAULT_BATCH) -> list[PendingResult]:
    """Continue many pending rows, up to ``size`` instances of one namespace per transaction.

    The same work as :func:`run_pending` for each row; the batch shares one commit and
    takes its chains level by level (:func:`~weave_core.runtime.snapshot.lock_chains`), so
    a burst of due timers costs a fraction of the statements. If a batch fails, it rolls
    back whole and its rows run one by one (each with :func:`run_pending`'s own retry), so
    one bad row never holds the others back.
    """
    if not pending_ids:
        return []
    peeks = engine.db.read(lambda conn: _peek_many(conn, pending_ids), name="pending_peek_many")
    results: list[PendingResult] = []
    for batch in _batches(peeks, size):
        try:
            results += engine.db.transaction(partial(_run_batch_txn, engine=engine, batch=batch),
                                             name="run_pending_batch")
        except Exception:
            logger.exception("a batch of %d pending advances failed; running them one by one",
                             len(batch))
            results += [run_pending(engine, int(r.id)) for r in batch]
    return results


__all__ = ["DEFAULT_BATCH", "PendingResult", "run_pending", "run_pending_batch"]
