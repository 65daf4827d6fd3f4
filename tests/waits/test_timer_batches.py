"""A burst of due timers: the tick continues pending rows in batches (one transaction per
namespace batch, chains locked level by level), with the same outcome as one by one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from tests.runtime.helpers import (
    audit_of,
    definition,
    instance,
    new_namespace,
    publish,
    report,
    rows,
    start,
    steps,
    task,
    tasks_of,
    transitions_of,
    work,
)
from tests.runtime.test_lock_order import LockRecorder, recorder  # noqa: F401  the fixture
from tests.waits.helpers import (
    due_rows,
    poll_step,
    rounds_of,
    send,
    signal_step,
    timer_step,
    wait_of,
)
from weave_core.access.identity import CLI_ACTOR
from weave_core.dispatch import set_queue_capacity
from weave_core.engine import Engine
from weave_core.foundation.faults import armed
from weave_core.runtime import run_pending, run_tick
from weave_core.runtime.checkpoints import _batches, run_pending_batch
from weave_core.storage.db import set_clock_offset
from weave_core.storage.schema import weave_instances, weave_pending_advances


def _timers(engine: Engine, ns: str, count: int, *, then_task: bool) -> list[str]:
    steps_ = [timer_step("nap", 60)] + ([task("after")] if then_task else [])
    publish(engine, ns, definition("burst", steps_))
    return [start(engine, ns, "burst", {}).instance.instance_id for _ in range(count)]


def _due(engine: Engine, ids: list[str]) -> list[int]:
    return [int(row.id) for wid in ids for row in due_rows(engine, wid, "TIMER")]


@pytest.fixture
def commits(engine: Engine) -> Iterator[list[int]]:
    """Counts the COMMITs the engine's connections issue."""
    counted: list[int] = []

    def _commit(conn: Any) -> None:
        counted.append(1)

    event.listen(engine.db.engine, "commit", _commit)
    yield counted
    event.remove(engine.db.engine, "commit", _commit)


def test_a_batch_fires_many_timers_and_starts_their_successors(any_engine: Engine) -> None:
    engine = any_engine
    ns = new_namespace(engine)
    ids = _timers(engine, ns, 5, then_task=True)
    pending = _due(engine, ids)
    set_clock_offset(engine.db, 61)
    results = run_pending_batch(engine, pending)
    assert sorted(r.pending_id for r in results) == sorted(pending)
    assert {r.outcome for r in results} == {"advanced"}
    for wid in ids:
        assert steps(engine, wid)["nap"].phase == "SUCCEEDED"
        assert steps(engine, wid)["after"].phase == "ACTIVE"
        assert [t.status for t in tasks_of(engine, wid)] == ["PENDING"]
        wait = wait_of(engine, wid, "nap")
        assert (wait.state, wait.winner) == ("SATISFIED", "timer")
        revisions = [t.revision for t in transitions_of(engine, wid)]
        assert revisions == list(range(1, len(revisions) + 1))
        assert instance(engine, wid).revision == revisions[-1]
        # one audit row per instance and transaction, as one by one
        assert [a.action for a in audit_of(engine, wid)][-1] == "workflow.advanced"
    # a second run finds nothing left to do
    assert run_pending_batch(engine, pending) == []


def test_a_batch_shares_one_commit(engine: Engine, commits: list[int]) -> None:
    ns = new_namespace(engine)
    ids = _timers(engine, ns, 6, then_task=True)
    pending = _due(engine, ids)
    set_clock_offset(engine.db, 61)
    commits.clear()
    results = run_pending_batch(engine, pending, size=3)
    assert len(results) == 6 and {r.outcome for r in results} == {"advanced"}
    # the unlocked peek (a read) and two batch transactions of three instances each
    assert len(commits) <= 3


def test_a_batch_locks_level_by_level_and_skips_the_quota_without_queues(
    engine: Engine, recorder: LockRecorder,  # noqa: F811
) -> None:
    ns = new_namespace(engine)
    with_task = _timers(engine, ns, 3, then_task=True)
    other = new_namespace(engine)
    timer_only = _timers(engine, other, 3, then_task=False)
    pending = _due(engine, with_task + timer_only)
    set_clock_offset(engine.db, 61)
    recorder.transactions.clear()
    results = run_pending_batch(engine, pending)
    assert {r.outcome for r in results} == {"advanced"}
    assert recorder.violations() == []
    batches = [locks for locks in recorder.transactions
               if ("weave_pending_advances" in {t for _, t in locks})]
    assert len(batches) == 2
    tables = [[t for _, t in locks] for locks in batches]
    # the batch that creates tasks takes the quota once, before every instance row
    quota = next(t for t in tables if "weave_namespace_quotas" in t)
    assert quota.count("weave_namespace_quotas") == 1
    assert quota.count("weave_instances") == 1  # one locking read for the three rows
    # instances whose version names no queue never touch the namespace's quota row
    bare = next(t for t in tables if "weave_namespace_quotas" not in t)
    assert "weave_queues" not in bare
    for wid in timer_only:
        assert instance(engine, wid).status == "SUCCEEDED"


def test_a_lone_timer_without_queues_skips_the_quota_lock(
    engine: Engine, recorder: LockRecorder,  # noqa: F811
) -> None:
    ns = new_namespace(engine)
    (wid,) = _timers(engine, ns, 1, then_task=False)
    (pending,) = _due(engine, [wid])
    set_clock_offset(engine.db, 61)
    recorder.transactions.clear()
    assert run_pending(engine, pending).outcome == "advanced"
    locked = {t for locks in recorder.transactions for _, t in locks}
    assert "weave_instances" in locked and "weave_namespace_quotas" not in locked
    assert instance(engine, wid).status == "SUCCEEDED"


def test_a_failing_batch_runs_its_rows_one_by_one(engine: Engine) -> None:
    ns = new_namespace(engine)
    ids = _timers(engine, ns, 3, then_task=True)
    pending = _due(engine, ids)
    set_clock_offset(engine.db, 61)
    with armed("runtime.audit", times=1):  # the batch's first audit write fails
        results = run_pending_batch(engine, pending)
    assert {r.outcome for r in results} == {"advanced"}
    for wid in ids:  # nothing of the failed batch stayed: one task each, no duplicate
        assert len(tasks_of(engine, wid)) == 1
        assert steps(engine, wid)["after"].phase == "ACTIVE"


def test_the_tick_drains_a_burst_in_batches(any_engine: Engine) -> None:
    engine = any_engine
    ns = new_namespace(engine)
    ids = _timers(engine, ns, 40, then_task=False)
    set_clock_offset(engine.db, 61)
    report = run_tick(engine, max_candidates=400)
    assert report.outcomes.get("advanced", 0) >= 40
    assert {instance(engine, wid).status for wid in ids} == {"SUCCEEDED"}


class _Peek(NamedTuple):
    id: int
    namespace: str
    instance_id: str


def test_batches_group_by_namespace_with_one_row_per_instance() -> None:
    rows = [_Peek(1, "b", "i1"), _Peek(2, "a", "i9"), _Peek(3, "a", "i2"),
            _Peek(4, "a", "i2"), _Peek(5, "a", "i3"), _Peek(6, "a", "i4")]
    got = [[(r.namespace, r.instance_id, r.id) for r in b] for b in _batches(rows, 3)]
    assert got == [
        [("a", "i2", 3), ("a", "i3", 5), ("a", "i4", 6)],
        [("a", "i2", 4), ("a", "i9", 2)],  # a second row of i2 waits for the next batch
        [("b", "i1", 1)],
    ]
    assert _batches([], 3) == []


def test_a_batch_leaves_an_instance_another_transaction_holds(engine: Engine) -> None:
    ns = new_namespace(engine)
    held, free = _timers(engine, ns, 2, then_task=True)
    pending = _due(engine, [held, free])
    set_clock_offset(engine.db, 61)
    with engine.db.engine.connect() as other:
        other.execute(sa.select(weave_instances.c.instance_id)
                      .where(weave_instances.c.instance_id == held).with_for_update())
        results = {r.instance_id: r.outcome for r in run_pending_batch(engine, pending)}
        other.rollback()
    # another engine's batch would have waited here; this one skips the row and moves on
    assert results == {held: "busy", free: "advanced"}
    assert steps(engine, held)["nap"].phase == "ACTIVE"
    assert [r.state for r in due_rows(engine, held, "TIMER")] == ["PENDING"]
    assert [r.outcome for r in run_pending_batch(engine, pending)] == ["advanced"]
    assert steps(engine, held)["after"].phase == "ACTIVE"


def _all_due(engine: Engine, ids: list[str]) -> list[int]:
    p = weave_pending_advances
    found = rows(engine, p, p.c.instance_id.in_(ids), p.c.state == "PENDING")
    now = engine.db.read(lambda conn: engine.db.now(conn), name="t")
    return [int(r.id) for r in found if r.due_at <= now]


def test_one_batch_runs_every_kind_of_due_row(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("t", [timer_step("nap", 60), task("after")]))
    publish(engine, ns, definition("s", [signal_step("approval"), task("after")]))
    publish(engine, ns, definition("so", [signal_step("approval", timeout=30), task("after")]))
    publish(engine, ns, definition("p", [poll_step(interval=30, deadline=300), task("after")]))
    timer = start(engine, ns, "t", {}).instance.instance_id
    signalled = start(engine, ns, "s", {"job": "job-1"}).instance.instance_id
    timed_out = start(engine, ns, "so", {"job": "job-2"}).instance.instance_id
    polled = start(engine, ns, "p", {"job": "job-3"}).instance.instance_id
    (round1,) = work(engine, ns, handlers=["job_status"])
    report(engine, ns, round1, {"status": "RUNNING"})  # the next round is due 30 s later
    send(engine, ns, signalled, deliver=False)  # its SIGNAL row waits for the tick
    set_clock_offset(engine.db, 61)
    due = _all_due(engine, [timer, signalled, timed_out, polled])
    kinds = {r.kind for r in rows(engine, weave_pending_advances,
                                  weave_pending_advances.c.id.in_(due))}
    assert kinds == {"TIMER", "SIGNAL", "POLL"}
    results = run_pending_batch(engine, due)
    assert {r.outcome for r in results} == {"advanced"}
    assert steps(engine, timer)["after"].phase == "ACTIVE"
    assert wait_of(engine, signalled, "approval").winner == "signal"
    assert steps(engine, signalled)["after"].phase == "ACTIVE"
    assert wait_of(engine, timed_out, "approval").state == "TIMED_OUT"
    assert instance(engine, timed_out).status == "NEEDS_REVIEW"
    assert [r.round for r in rounds_of(engine, polled)] == [1, 2]
    for wid in (timer, signalled, timed_out, polled):
        revisions = [t.revision for t in transitions_of(engine, wid)]
        assert revisions == list(range(1, len(revisions) + 1))
        assert instance(engine, wid).revision == revisions[-1]


def test_a_full_queue_defers_only_the_instances_it_stops(engine: Engine) -> None:
    ns = new_namespace(engine)
    set_queue_capacity(engine.db, ns, "q", 1, actor=CLI_ACTOR)
    ids = _timers(engine, ns, 3, then_task=True)
    set_clock_offset(engine.db, 61)
    results = run_pending_batch(engine, _due(engine, ids))
    assert {r.outcome for r in results} == {"advanced"}
    started = [wid for wid in ids if tasks_of(engine, wid)]
    assert len(started) == 1  # the queue holds one task; nothing is counted twice
    for wid in set(ids) - set(started):
        assert steps(engine, wid)["nap"].phase == "SUCCEEDED"  # the timer's fact is kept
        assert "after" not in steps(engine, wid)
        retries = [r.reason for r in due_rows(engine, wid, "ROOT") if r.ref != "deadline"]
        assert retries == ["queue_full"]
    set_queue_capacity(engine.db, ns, "q", 10, actor=CLI_ACTOR)
    set_clock_offset(engine.db, 61 + 60)
    run_tick(engine)
    assert all(len(tasks_of(engine, wid)) == 1 for wid in ids)
    assert all(steps(engine, wid)["after"].phase == "ACTIVE" for wid in ids)
