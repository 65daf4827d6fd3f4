"""Bounded polling (R-7.4 to R-7.7): rounds, intervals, deadline, retries, receipts, pause."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from tests.runtime.helpers import (
    definition,
    instance,
    new_namespace,
    publish,
    report,
    start,
    steps,
    task,
    tasks_of,
    transitions_of,
    work,
)
from tests.waits.helpers import due_rows, poll_step, rounds_of, send, wait_of
from weave_core.dispatch.errors import AttemptSupersededError, LeaseExpiredError
from weave_core.dispatch.gates import set_gate_txn
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.errors import ValidationError
from weave_core.runtime import consume_task_results, run_pending, run_tick
from weave_core.runtime.pending import PendingKind, schedule_txn
from weave_core.runtime.waits import resume_waits_txn
from weave_core.storage.db import set_clock_offset
from weave_core.storage.schema import weave_instances


def _polling(engine: Engine, **poll: object) -> tuple[str, str]:
    ns = new_namespace(engine)
    publish(engine, ns, definition("p", [poll_step(**poll), task("after")]))  # type: ignore[arg-type]
    return ns, start(engine, ns, "p", {"job": "job-1"}).instance.instance_id


def _round(engine: Engine, ns: str, output: object, **kw: object) -> None:
    (claimed,) = work(engine, ns, handlers=["job_status"])
    report(engine, ns, claimed, output, **kw)  # type: ignore[arg-type]


def test_each_round_has_one_task_and_the_next_waits_for_the_interval(engine: Engine) -> None:
    ns, wid = _polling(engine, interval=30, deadline=300)
    (r1,) = rounds_of(engine, wid)
    wait = wait_of(engine, wid, "outcome")
    (t1,) = tasks_of(engine, wid)
    assert (r1.round, r1.task_id, r1.state) == (1, t1.task_id, "RUNNING")
    assert t1.deadline_at == wait.deadline_at  # the round cannot outlive the poll
    (claimed,) = work(engine, ns, handlers=["job_status"])
    assert claimed.task_id == t1.task_id and claimed.deadline_at == wait.deadline_at
    report(engine, ns, claimed, {"status": "RUNNING"})
    wait = wait_of(engine, wid, "outcome")
    r1 = rounds_of(engine, wid)[0]
    assert (wait.last_status, r1.status) == ("PENDING", "PENDING")
    assert wait.next_round_at == r1.result_accepted_at + timedelta(seconds=30)
    assert instance(engine, wid).status == "WAITING"
    set_clock_offset(engine.db, 20)
    run_tick(engine)
    assert len(rounds_of(engine, wid)) == 1 and work(engine, ns, handlers=["job_status"]) == []
    set_clock_offset(engine.db, 31)
    run_tick(engine)
    assert [r.round for r in rounds_of(engine, wid)] == [1, 2]
    run_tick(engine)  # one round at a time: a second tick starts nothing
    assert len(rounds_of(engine, wid)) == 2
    _round(engine, ns, {"status": "DONE", "ref": 7})
    assert steps(engine, wid)["outcome"].phase == "SUCCEEDED"
    assert exactjson.loads(steps(engine, wid)["outcome"].output) == {"status": "DONE", "ref": 7}
    assert wait_of(engine, wid, "outcome").winner == "poll_result"
    assert len(work(engine, ns, handlers=["after"])) == 1


def test_rounds_exhausted_go_to_review_with_the_last_result(engine: Engine) -> None:
    ns, wid = _polling(engine, rounds=2, interval=10, deadline=300)
    _round(engine, ns, {"status": "QUEUED"})
    set_clock_offset(engine.db, 11)
    run_tick(engine)
    _round(engine, ns, {"status": "RUNNING", "n": 2})
    wait = wait_of(engine, wid, "outcome")
    assert (wait.state, wait.winner) == ("REVIEW", "rounds_exhausted")
    assert exactjson.loads(wait.last_result) == {"status": "RUNNING", "n": 2}
    assert steps(engine, wid)["outcome"].reason == "poll_exhausted"
    assert instance(engine, wid).status == "NEEDS_REVIEW"
    assert len(rounds_of(engine, wid)) == 2 and due_rows(engine, wid, "POLL") == []


@pytest.mark.parametrize(("output", "phase", "reason"), [
    ({"status": "REJECTED"}, "FAILED", "poll_result_failed"),
    ({"status": "HELD"}, "NEEDS_REVIEW", "poll_result_needs_review"),
    ({"status": "WHAT"}, "NEEDS_REVIEW", "poll_result_unclassified"),
    ({"status": 1}, "NEEDS_REVIEW", "poll_result_unclassified"),
])
def test_each_result_is_classified_never_success_by_default(
    engine: Engine, output: object, phase: str, reason: str
) -> None:
    ns, wid = _polling(engine)
    _round(engine, ns, output)
    assert (steps(engine, wid)["outcome"].phase, steps(engine, wid)["outcome"].reason) == (
        phase, reason)
    assert instance(engine, wid).status == "NEEDS_REVIEW"
    assert len(rounds_of(engine, wid)) == 1  # never another round


def test_a_round_out_of_retries_goes_to_review_never_a_new_round(engine: Engine) -> None:
    ns, wid = _polling(engine, attempts=2)
    _round(engine, ns, None, fail=True, retryable=True)  # retried inside the round
    assert steps(engine, wid)["outcome"].phase == "ACTIVE"
    set_clock_offset(engine.db, 5)
    _round(engine, ns, None, fail=True, retryable=True)  # the round's budget is spent
    assert steps(engine, wid)["outcome"].reason == "poll_round_failed"
    assert len(rounds_of(engine, wid)) == 1
    assert len({t.task_id for t in tasks_of(engine, wid)}) == 1


def test_the_deadline_stops_rounds_and_late_results_are_evidence_only(engine: Engine) -> None:
    ns, wid = _polling(engine, rounds=10, interval=30, deadline=30)
    (claimed,) = work(engine, ns, handlers=["job_status"])  # in flight at the deadline
    set_clock_offset(engine.db, 31)  # past the deadline, the lease (60 s) still valid
    run_tick(engine)
    wait = wait_of(engine, wid, "outcome")
    assert (wait.state, wait.winner) == ("REVIEW", "deadline")
    assert steps(engine, wid)["outcome"].reason == "poll_exhausted"
    # No lease outlives the poll deadline: the late report is refused, as lease_expired or,
    # once the tick's lease sweep expired it first, as attempt_superseded.
    with pytest.raises((LeaseExpiredError, AttemptSupersededError)):
        report(engine, ns, claimed, {"status": "DONE"}, consume=False)
    consume_task_results(engine, ns, claimed.task_id)  # the expiry's result: evidence only
    (r1,) = rounds_of(engine, wid)
    assert r1.state == "LATE" and r1.classification == "settled_step_history"
    assert instance(engine, wid).status == "NEEDS_REVIEW"
    assert work(engine, ns, handlers=["after"]) == []


def test_no_round_is_armed_past_the_deadline(engine: Engine) -> None:
    ns, wid = _polling(engine, rounds=10, interval=60, deadline=60)
    _round(engine, ns, {"status": "QUEUED"})
    assert wait_of(engine, wid, "outcome").next_round_at is None
    assert due_rows(engine, wid, "POLL") == []
    set_clock_offset(engine.db, 61)
    run_tick(engine)
    assert wait_of(engine, wid, "outcome").winner == "deadline"


def test_a_receipt_during_an_in_flight_round_wins_and_the_round_is_collected(
    engine: Engine,
) -> None:
    ns, wid = _polling(engine)
    (claimed,) = work(engine, ns, handlers=["job_status"])
    send(engine, ns, wid, "receipt", payload={"receipt": "R-1"})
    wait = wait_of(engine, wid, "outcome")
    assert (wait.state, wait.winner) == ("SATISFIED", "receipt")
    assert exactjson.loads(steps(engine, wid)["outcome"].output) == {"receipt": "R-1"}
    assert len(work(engine, ns, handlers=["after"])) == 1
    results = report(engine, ns, claimed, {"status": "DONE"})
    assert results[0].outcome.value == "ignored"  # collected and audited, never advances
    (r1,) = rounds_of(engine, wid)
    assert r1.state == "LATE" and r1.classification == "settled_step_history"
    assert exactjson.loads(steps(engine, wid)["outcome"].output) == {"receipt": "R-1"}


def test_a_receipt_after_the_poll_result_loses(engine: Engine) -> None:
    ns, wid = _polling(engine)
    _round(engine, ns, {"status": "DONE"})
    acc = send(engine, ns, wid, "receipt", payload={"receipt": "late"})
    assert acc.pending_id is None  # no open wait: the receipt never advances anything
    assert exactjson.loads(steps(engine, wid)["outcome"].output) == {"status": "DONE"}


def test_pause_starts_no_round_and_resume_replays_no_missed_times(engine: Engine) -> None:
    ns, wid = _polling(engine, rounds=10, interval=10, deadline=600)
    _round(engine, ns, {"status": "QUEUED"})
    _set_paused(engine, wid, True)
    set_clock_offset(engine.db, 100)  # ten intervals pass while paused
    run_tick(engine)
    assert len(rounds_of(engine, wid)) == 1
    deadline = wait_of(engine, wid, "outcome").deadline_at
    _set_paused(engine, wid, False)
    run_tick(engine)
    assert [r.round for r in rounds_of(engine, wid)] == [1, 2]  # one round, not nine
    assert wait_of(engine, wid, "outcome").deadline_at == deadline  # never extended


def _set_paused(engine: Engine, wid: str, paused: bool) -> None:
    from tests.runtime.helpers import instance as inst
    from weave_core.runtime.snapshot import lock_chain

    row = inst(engine, wid)

    def _txn(conn: sa.Connection) -> None:
        li = lock_chain(conn, row.namespace, wid)
        assert li is not None
        conn.execute(sa.update(weave_instances).where(weave_instances.c.instance_id == wid)
                     .values(paused=paused))
        set_gate_txn(conn, li.gate_id, not paused, now=engine.db.now(conn))
        if not paused:  # what a resume does for waits (issue 7 calls the same function)
            li.paused, li.gate_open = False, True
            now = engine.db.now(conn)
            resume_waits_txn(conn, li, now=now)
            schedule_txn(conn, namespace=li.namespace, instance_id=wid, kind=PendingKind.ROOT,
                         ref="", due_at=now, reason="resumed", root_version=li.root_version,
                         root_identity=li.root_identity, now=now)

    engine.db.transaction(_txn, name="test_pause")


def test_start_refuses_waits_longer_than_the_instance_deadline(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("long", [poll_step(deadline=7200)], deadline_seconds=3600))
    with pytest.raises(ValidationError) as err:
        start(engine, ns, "long", {"job": "j"})
    assert [p.code for p in err.value.problems] == ["wait_exceeds_deadline"]


def test_transitions_name_every_round(engine: Engine) -> None:
    ns, wid = _polling(engine, interval=5)
    _round(engine, ns, {"status": "QUEUED"})
    set_clock_offset(engine.db, 6)
    run_tick(engine)
    kinds = [t.kind for t in transitions_of(engine, wid)]
    assert "poll.round.pending" in kinds and "poll.round.started" in kinds


def test_a_result_accepted_before_the_deadline_is_on_time_when_consumed_later(
    engine: Engine,
) -> None:
    ns, wid = _polling(engine, rounds=10, interval=30, deadline=30)
    (claimed,) = work(engine, ns, handlers=["job_status"])
    report(engine, ns, claimed, {"status": "DONE"}, consume=False)  # accepted in time
    set_clock_offset(engine.db, 31)
    (timer,) = due_rows(engine, wid, "TIMER")
    run_pending(engine, int(timer.id))  # the deadline row first: it waits for the result
    assert wait_of(engine, wid, "outcome").state == "OPEN"
    run_tick(engine)
    assert steps(engine, wid)["outcome"].phase == "SUCCEEDED"
    assert wait_of(engine, wid, "outcome").winner == "poll_result"
