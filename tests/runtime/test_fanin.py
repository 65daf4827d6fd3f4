"""Reports of one instance that arrive together are taken in one transaction
(``runtime.lanes``, ``runtime.step_batch``): the branches of a fan-out reported at the same
moment cost one step transaction, not one each, and every report keeps its own answer."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event

from tests.runtime.helpers import (
    definition,
    instance,
    new_namespace,
    publish,
    report,
    start,
    task,
    tasks_of,
    work,
)
from tests.runtime.test_lock_order import LockRecorder
from weave_core.dispatch import HandlerRef, Report, ReportOutcome
from weave_core.dispatch.errors import AttemptNotFoundError
from weave_core.dispatch.model import ClaimedTask
from weave_core.engine import Engine
from weave_core.runtime.lanes import MAX_BATCH, Lanes, Queued, Turn, lanes_of
from weave_core.runtime.step import ClaimNext, StepDone, complete_step
from weave_core.runtime.step_settle import Reported
from weave_core.storage.locks import lock_chain_of_tasks_at_once, observing_locks

BRANCHES = 4


def _fan(engine: Engine) -> tuple[str, str, list[ClaimedTask]]:
    ns = new_namespace(engine)
    publish(engine, ns, definition("fan", [
        {"id": "fan", "kind": "parallel",
         "branches": {f"b{i}": [task(f"f{i}", "a")] for i in range(BRANCHES)}},
        task("after"),
    ]))
    wid = start(engine, ns, "fan", {}).instance.instance_id
    claimed = work(engine, ns, handlers=["a"], max_tasks=BRANCHES)
    assert len(claimed) == BRANCHES
    return ns, wid, claimed


@contextmanager
def _held_lane(engine: Engine, wid: str, waiting: int) -> Iterator[None]:
    """Hold the instance's lane as a running step would, until ``waiting`` reports queue
    behind it; then let them go as one batch."""
    lanes = lanes_of(engine)
    holder = Turn(Reported("", "", "", Report(ReportOutcome.SUCCEEDED), "", None))
    lanes.enter(wid, holder, None)
    try:
        yield
        deadline = time.monotonic() + 10
        while lanes.waiting(wid) < waiting:
            assert time.monotonic() < deadline, lanes.waiting(wid)
            time.sleep(0.005)
    finally:
        lanes.leave(wid)


def _report_all(engine: Engine, ns: str, wid: str, claimed: Sequence[ClaimedTask],
                attempts: Sequence[str] | None = None) -> list[StepDone | BaseException]:
    answers: list[StepDone | BaseException | None] = [None] * len(claimed)

    def _one(i: int, c: ClaimedTask) -> None:
        try:
            answers[i] = complete_step(
                engine, namespace=ns, task_id=c.task_id,
                attempt_id=attempts[i] if attempts else c.attempt_id,
                report=Report(ReportOutcome.SUCCEEDED, output={"task": c.task_id}),
                actor="worker:test",
                claim_next=ClaimNext(f"w{i}", [HandlerRef("a", "1"), HandlerRef("after", "1")]))
        except Exception as exc:
            answers[i] = exc

    threads = [threading.Thread(target=_one, args=(i, c)) for i, c in enumerate(claimed)]
    with _held_lane(engine, wid, len(claimed)):
        for thread in threads:
            thread.start()
    for thread in threads:
        thread.join(30)
    assert all(answer is not None for answer in answers)
    return [answer for answer in answers if answer is not None]


@pytest.fixture
def commits(engine: Engine) -> Iterator[list[str]]:
    seen: list[str] = []

    def _commit(conn: Any) -> None:
        seen.append("COMMIT")

    event.listen(engine.db.engine, "commit", _commit)
    yield seen
    event.remove(engine.db.engine, "commit", _commit)


def test_branches_reported_together_are_one_transaction_and_the_join_fires_once(
    engine: Engine, commits: list[str]
) -> None:
    ns, wid, claimed = _fan(engine)
    commits.clear()
    recorder = LockRecorder()

    def _before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        recorder.statement(conn.connection.dbapi_connection, statement)

    def _end(conn: Any) -> None:
        recorder.end(conn.connection.dbapi_connection)

    sa_engine = engine.db.engine
    listeners = (("before_cursor_execute", _before), ("commit", _end), ("rollback", _end))
    for name, fn in listeners:
        event.listen(sa_engine, name, fn)
    try:
        answers = _report_all(engine, ns, wid, claimed)
    finally:
        for name, fn in listeners:
            event.remove(sa_engine, name, fn)
    done = [a for a in answers if isinstance(a, StepDone)]
    assert len(done) == BRANCHES, answers
    assert all(d.one_transaction and d.completion.task.status.value == "SUCCEEDED"
               for d in done)
    assert len(commits) == 1  # the queued reports' peeks rolled back; one COMMIT for all
    assert recorder.violations() == []
    handed = [t for d in done for t in d.next_tasks]
    assert [t.handler for t in handed] == ["after"]  # the join started it once, for one
    statuses = sorted((t.handler, t.status) for t in tasks_of(engine, wid))
    assert statuses == [*[("a", "SUCCEEDED")] * BRANCHES, ("after", "RUNNING")]
    report(engine, ns, handed[0], {})
    assert instance(engine, wid).status == "SUCCEEDED"


def test_a_batch_with_a_report_it_cannot_take_answers_each_on_its_own(
    engine: Engine,
) -> None:
    ns, wid, claimed = _fan(engine)
    attempts = [c.attempt_id for c in claimed]
    attempts[1] = "att_not_this_one"
    answers = _report_all(engine, ns, wid, claimed, attempts)
    assert isinstance(answers[1], AttemptNotFoundError)
    done = [a for a in answers if isinstance(a, StepDone)]
    assert len(done) == BRANCHES - 1
    assert all(d.completion.task.status.value == "SUCCEEDED" for d in done)
    assert [t.status for t in tasks_of(engine, wid) if t.task_id == claimed[1].task_id] == [
        "RUNNING"]
    report(engine, ns, claimed[1], {})  # its own attempt, once more: the join fires
    (after,) = work(engine, ns, handlers=["after"])
    report(engine, ns, after, {})
    assert instance(engine, wid).status == "SUCCEEDED"


def test_the_tasks_of_a_batch_are_locked_activations_first_then_tasks_in_id_order(
    engine: Engine,
) -> None:
    ns, wid, claimed = _fan(engine)
    owners = {t.task_id: t.owner_id for t in tasks_of(engine, wid)}
    items = [(owners[c.task_id], c.task_id, c.attempt_id) for c in reversed(claimed)]
    columns = {"namespace": ("name",), "instance": ("instance_id", "gate_id"),
               "gate": ("gate_id",), "steps": ("step_id",)}

    def _locks(conn: Any) -> tuple[Any, list[tuple[int, str]]]:
        levels: list[tuple[int, str]] = []
        with observing_locks(conn, lambda level, table, shared: levels.append(
                (int(level), table))):
            found = lock_chain_of_tasks_at_once(
                conn, namespace=ns, instance_id=wid, tasks=items,
                now_columns=engine.db.now_columns, columns=columns)
        return found, levels

    found, levels = engine.db.transaction(_locks, name="t")
    assert [level for level, _ in levels] == sorted(level for level, _ in levels)
    assert [t for _, t in levels] == [
        "weave_namespaces", "weave_instances", "weave_execution_gates", "weave_steps",
        *["weave_activations"] * BRANCHES, *["weave_tasks"] * BRANCHES]
    _, inst, _, _, acts, tasks = found
    assert inst.instance_id == wid
    assert [a.activation_id for a in acts] == [owner for owner, _, _ in items]
    assert [t.task_id for t in tasks] == [task_id for _, task_id, _ in items]
    for c in claimed:
        report(engine, ns, c, {})
    (after,) = work(engine, ns, handlers=["after"])
    report(engine, ns, after, {})


def test_one_report_sent_twice_in_a_batch_is_recorded_once(engine: Engine) -> None:
    ns, wid, claimed = _fan(engine)
    twice = [claimed[0], claimed[0], *claimed[1:]]
    answers = _report_all(engine, ns, wid, twice)
    done = [a for a in answers if isinstance(a, StepDone)]
    assert len(done) == BRANCHES + 1, [a for a in answers if not isinstance(a, StepDone)]
    assert sorted(d.completion.replay for d in done[:2]) == [False, True]
    (after,) = [t for d in done for t in d.next_tasks] or work(engine, ns, handlers=["after"])
    report(engine, ns, after, {})
    assert instance(engine, wid).status == "SUCCEEDED"


def test_a_lane_hands_on_batches_of_at_most_max_batch_reports() -> None:
    lanes = Lanes()
    leader = Turn(Reported("ns", "t0", "a0", Report(ReportOutcome.SUCCEEDED), "w", None))
    lanes.enter("wf", leader, None)  # the lane was free: it leads
    waiting = [Turn(Reported("ns", f"t{i}", f"a{i}", Report(ReportOutcome.SUCCEEDED), "w",
                             None)) for i in range(1, MAX_BATCH + 9)]
    for turn in waiting:
        with pytest.raises(Queued):
            lanes.enter("wf", turn, None)
    assert lanes.waiting("wf") == MAX_BATCH + 8
    lanes.leave("wf")  # the leader is done: the first MAX_BATCH go, led by the first
    first = waiting[0]
    assert first.ready.is_set() and first.held == "wf" and first.batch == waiting[:MAX_BATCH]
    assert lanes.waiting("wf") == 8
    lanes.enter("wf", waiting[5], None)  # a member of the batch that holds the lane goes on
    lanes.leave("wf")
    assert waiting[MAX_BATCH].batch == waiting[MAX_BATCH:]
    lanes.leave("wf")  # nobody waits: the lane is free again
    newcomer = Turn(Reported("ns", "tx", "ax", Report(ReportOutcome.SUCCEEDED), "w", None))
    lanes.enter("wf", newcomer, None)
    assert newcomer.held == "wf"
