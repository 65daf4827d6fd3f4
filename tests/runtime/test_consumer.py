"""Every row of the consumption table (DESIGN.md §5), with the rows and audit it leaves."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pymysql
import pytest
import sqlalchemy as sa
from sqlalchemy import event

from tests.runtime.helpers import (
    activations,
    audit_of,
    definition,
    inbox_of,
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
from weave_core.dispatch.gates import get_gate
from weave_core.dispatch.model import new_id
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.faults import armed
from weave_core.runtime import consume
from weave_core.runtime.consumer import defer
from weave_core.storage.inbox_ids import next_inbox_id
from weave_core.storage.schema import weave_activations, weave_inbox, weave_steps


def _two_steps(engine: Engine, **step_a: Any) -> tuple[str, str]:
    ns = new_namespace(engine)
    publish(engine, ns, definition("two", [task("a", **step_a), task("b")]))
    wid = start(engine, ns, "two", {}).instance.instance_id
    return ns, wid


def _update(engine: Engine, stmt: Any) -> None:
    engine.db.transaction(lambda c: c.execute(stmt), name="test_update")


def _audit_count(engine: Engine, wid: str) -> int:
    return len(audit_of(engine, wid))


def _gate_open(engine: Engine, wid: str) -> bool:
    gate_id = instance(engine, wid).gate_id
    return engine.db.read(lambda c: get_gate(c, gate_id)).is_open


def test_processed_or_quarantined_row_seen_again_changes_nothing(any_engine: Engine) -> None:
    engine = any_engine
    ns, wid = _two_steps(engine)
    (claimed,) = work(engine, ns, handlers=["a"])
    (first,) = report(engine, ns, claimed, {})
    assert first.outcome.value == "consumed"
    audits, revision = _audit_count(engine, wid), instance(engine, wid).revision
    again = consume(engine, first.inbox_id)
    assert again.outcome.value == "already"
    assert _audit_count(engine, wid) == audits
    assert instance(engine, wid).revision == revision
    assert len(tasks_of(engine, wid)) == 2


# weave check would rightly report what this test builds by hand:
# a recovery faked by SQL: a second ACTIVE activation with no task
@pytest.mark.check_skip("I1", "I2")
def test_stale_activation_is_acknowledged_and_current_work_untouched(engine: Engine) -> None:
    ns, wid = _two_steps(engine)
    (claimed,) = work(engine, ns, handlers=["a"])
    # a recovery (issue 7) gave step a a new activation: the old task's result is stale
    old = activations(engine, wid)[0]
    newer = new_id("act")
    a = weave_activations
    _update(engine, sa.insert(a).values(
        activation_id=newer, namespace=ns, instance_id=wid, step_id="a", state="ACTIVE",
        state_version=1, task_id=None, gate_id=old.gate_id, created_at=old.created_at))
    s = weave_steps
    _update(engine, sa.update(s).where(s.c.instance_id == wid, s.c.step_id == "a")
            .values(activation_id=newer))
    (result,) = report(engine, ns, claimed, {"x": 1})
    assert (result.outcome.value, result.code) == ("ignored", "stale_activation")
    (row,) = inbox_of(engine, wid)
    assert (row.state, row.error_code) == ("PROCESSED", "stale_activation")
    st = steps(engine, wid)
    assert st["a"].phase == "ACTIVE" and st["a"].activation_id == newer and "b" not in st
    assert instance(engine, wid).status == "RUNNING"
    assert audit_of(engine, wid)[-1].action == "workflow.result.ignored"
    assert transitions_of(engine, wid)[-1].reason == "stale_activation"


# weave check would rightly report what this test builds by hand:
# a result revision faked by SQL: the step waits on a settled task
@pytest.mark.check_skip("I1")
def test_lower_revision_is_acknowledged(engine: Engine) -> None:
    ns, wid = _two_steps(engine)
    (claimed,) = work(engine, ns, handlers=["a"])
    a = weave_activations
    _update(engine, sa.update(a).where(a.c.instance_id == wid).values(result_revision=99))
    (result,) = report(engine, ns, claimed, {})
    assert (result.outcome.value, result.code) == ("ignored", "lower_revision")
    assert steps(engine, wid)["a"].phase == "ACTIVE"


# weave check would rightly report what this test builds by hand:
# a task revision faked by SQL, with no status event
@pytest.mark.check_skip("I4")
def test_settled_step_keeps_another_historical_result_as_history(engine: Engine) -> None:
    ns, wid = _two_steps(engine)
    (claimed,) = work(engine, ns, handlers=["a"])
    report(engine, ns, claimed, {"v": 1})
    (row,) = inbox_of(engine, wid)
    # a later event of the same task (e.g. a review decision on it) arrives afterwards
    snap = exactjson.loads(row.snapshot)
    snap.update(revision=row.source_revision + 1, status="NEEDS_REVIEW", effect_unknown=True)
    i = weave_inbox
    # numbered as the engine numbers inbox rows (on MariaDB from its block, never by
    # AUTO_INCREMENT: storage/inbox_ids.py)
    numbered = engine.db.transaction(next_inbox_id, name="number")
    _update(engine, sa.insert(i).values(
        **({} if numbered is None else {"id": numbered}),
        namespace=ns, event_id=f"{row.source_task_id}:{row.source_revision + 1}",
        event_type="task.needs_review", source_task_id=row.source_task_id,
        source_activation_id=row.source_activation_id,
        source_revision=row.source_revision + 1, snapshot=exactjson.dumps(snap),
        state="PENDING", available_at=row.available_at, row_version=1,
        created_at=row.created_at))
    # the task row must show the revision (the source can't be ahead of its task)
    from weave_core.storage.schema import weave_tasks
    t = weave_tasks
    _update(engine, sa.update(t).where(t.c.task_id == row.source_task_id)
            .values(revision=row.source_revision + 1))
    later = inbox_of(engine, wid)[-1]
    result = consume(engine, later.id)
    assert (result.outcome.value, result.code) == ("ignored", "settled_step_history")
    st = steps(engine, wid)
    assert st["a"].phase == "SUCCEEDED" and st["b"].phase == "ACTIVE"
    assert instance(engine, wid).status == "RUNNING"


def test_contradictory_identity_is_quarantined_and_the_instance_reviewed(
    any_engine: Engine,
) -> None:
    engine = any_engine
    ns, wid = _two_steps(engine)
    (claimed,) = work(engine, ns, handlers=["a"])
    report(engine, ns, claimed, {}, consume=False)
    (row,) = inbox_of(engine, wid)
    snap = exactjson.loads(row.snapshot)
    snap["queue"] = "another-queue"
    i = weave_inbox
    _update(engine, sa.update(i).where(i.c.id == row.id).values(snapshot=exactjson.dumps(snap)))
    result = consume(engine, row.id)
    assert (result.outcome.value, result.code) == ("quarantined", "queue_mismatch")
    (row,) = inbox_of(engine, wid)
    assert (row.state, row.error_code) == ("QUARANTINED", "queue_mismatch")
    inst = instance(engine, wid)
    assert inst.status == "NEEDS_REVIEW" and inst.review_reason == "quarantined_result"
    assert not _gate_open(engine, wid)
    # the step's task settled and its result will never be applied: the step is in review
    a = steps(engine, wid)["a"]
    assert (a.phase, a.reason) == ("NEEDS_REVIEW", "quarantined_result")
    audits = _audit_count(engine, wid)
    assert audit_of(engine, wid)[-1].action == "workflow.result.quarantined"
    assert consume(engine, row.id).outcome.value == "already"
    assert _audit_count(engine, wid) == audits


def test_sql_error_rolls_back_and_retries_30s_later_keyed_on_version(
    any_engine: Engine,
) -> None:
    engine = any_engine
    ns, wid = _two_steps(engine)
    (claimed,) = work(engine, ns, handlers=["a"])
    report(engine, ns, claimed, {}, consume=False)
    (before,) = inbox_of(engine, wid)
    audits, revision = _audit_count(engine, wid), instance(engine, wid).revision
    with armed("runtime.consume.before_commit"):
        result = consume(engine, before.id)
    assert result.outcome.value == "deferred"
    (after,) = inbox_of(engine, wid)
    assert after.state == "PENDING" and after.row_version == before.row_version + 1
    assert (after.available_at - before.available_at).total_seconds() >= 29
    assert _audit_count(engine, wid) == audits and instance(engine, wid).revision == revision
    assert steps(engine, wid)["a"].phase == "ACTIVE" and len(tasks_of(engine, wid)) == 1
    # consumed by "another node" meanwhile: a late deferral keyed on the old version
    assert consume(engine, after.id).outcome.value == "consumed"
    assert defer(engine, after.id, after.row_version) is False
    (done,) = inbox_of(engine, wid)
    assert done.state == "PROCESSED"


@pytest.fixture
def refuse_inbox_ack(engine: Engine) -> Iterator[None]:
    """Make MariaDB's answer to acknowledging an inbox row 'Data too long' (1406)."""

    def _before(conn: Any, cursor: Any, statement: str, params: Any, context: Any,
                executemany: bool) -> None:
        if statement.startswith("UPDATE weave_inbox SET state") and "PROCESSED" in str(params):
            raise sa.exc.DataError(statement, params,
                                   pymysql.err.DataError(1406, "Data too long for column"))

    event.listen(engine.db.engine, "before_cursor_execute", _before)
    yield
    event.remove(engine.db.engine, "before_cursor_execute", _before)


def test_a_value_the_database_refuses_is_quarantined(
    engine: Engine, refuse_inbox_ack: None
) -> None:
    ns, wid = _two_steps(engine)
    (claimed,) = work(engine, ns, handlers=["a"])
    (result,) = report(engine, ns, claimed, {})
    assert (result.outcome.value, result.code) == ("quarantined", "value_refused")
    (row,) = inbox_of(engine, wid)
    assert row.state == "QUARANTINED"
    assert instance(engine, wid).status == "NEEDS_REVIEW"


def test_output_contract_breach_stops_dependent_work(any_engine: Engine) -> None:
    engine = any_engine
    ns, wid = _two_steps(engine, output_schema={
        "type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}})
    (claimed,) = work(engine, ns, handlers=["a"])
    (result,) = report(engine, ns, claimed, {"ok": "yes"})
    assert result.outcome.value == "consumed"
    st = steps(engine, wid)
    assert st["a"].phase == "NEEDS_REVIEW" and st["a"].reason == "output_contract_violated"
    assert "b" not in st
    inst = instance(engine, wid)
    assert inst.status == "NEEDS_REVIEW" and inst.review_reason == "output_contract_violated"
    (row,) = inbox_of(engine, wid)
    assert exactjson.loads(row.snapshot)["result"] == {"ok": "yes"}  # the result is kept


def test_effect_unknown_goes_to_review(engine: Engine) -> None:
    ns, wid = _two_steps(engine)
    (claimed,) = work(engine, ns, handlers=["a"])
    report(engine, ns, claimed, fail=True, consume=False)
    (row,) = inbox_of(engine, wid)
    snap = exactjson.loads(row.snapshot)
    snap["effect_unknown"] = True
    i = weave_inbox
    _update(engine, sa.update(i).where(i.c.id == row.id).values(snapshot=exactjson.dumps(snap)))
    consume(engine, row.id)
    st = steps(engine, wid)
    assert st["a"].phase == "NEEDS_REVIEW" and st["a"].reason == "effect_unknown"
    assert instance(engine, wid).status == "NEEDS_REVIEW"


def test_confirmed_cancellation_marks_the_step_cancelled_without_successor(
    any_engine: Engine,
) -> None:
    engine = any_engine
    ns, wid = _two_steps(engine)
    (claimed,) = work(engine, ns, handlers=["a"])
    (result,) = report(engine, ns, claimed, cancel=True)
    assert result.outcome.value == "consumed"
    st = steps(engine, wid)
    assert st["a"].phase == "CANCELLED" and "b" not in st
    assert instance(engine, wid).status == "NEEDS_REVIEW"
    details = exactjson.loads(transitions_of(engine, wid)[-2].details)
    assert details["inbox_id"] == result.inbox_id  # the evidence
    assert len(tasks_of(engine, wid)) == 1


def test_fail_after_settled_cancels_siblings_then_fails(any_engine: Engine) -> None:
    engine = any_engine
    ns = new_namespace(engine)
    publish(engine, ns, definition("fas", [
        {"id": "fan", "kind": "parallel", "branches": {"x": [task("x")], "y": [task("y")]}},
        task("after"),
    ], failure_policy="FAIL_AFTER_SETTLED"))
    wid = start(engine, ns, "fas", {}).instance.instance_id
    (x,) = work(engine, ns, handlers=["x"])
    report(engine, ns, x, fail=True)
    # y was PENDING: cancelled at once, its cancellation delivered and consumed
    inst = instance(engine, wid)
    assert inst.status == "CANCELLING" and not _gate_open(engine, wid)
    from weave_core.runtime import run_tick
    run_tick(engine)
    st = steps(engine, wid)
    assert st["x"].phase == "FAILED" and st["y"].phase == "CANCELLED"
    assert instance(engine, wid).status == "FAILED"
    assert "after" not in st
