"""Checkpoints (R-6.4) and successors in a savepoint under a full quota (R-6.5)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from tests.runtime.helpers import (
    activations,
    audit_of,
    definition,
    inbox_of,
    instance,
    new_namespace,
    pending_of,
    publish,
    report,
    run_worker,
    start,
    steps,
    task,
    tasks_of,
    work,
)
from weave_core.dispatch import set_namespace_quota
from weave_core.engine import Engine
from weave_core.runtime import run_pending, run_tick
from weave_core.storage.db import set_clock_offset
from weave_core.storage.schema import weave_pending_advances


@pytest.fixture
def clock(engine: Engine) -> Iterator[None]:
    yield
    set_clock_offset(engine.db, 0)


def _big(engine: Engine, ns: str, skipped: int) -> None:
    publish(engine, ns, definition("big", [
        task("a"),
        {"id": "route", "kind": "branch", "cases": [
            {"when": {"eq": [{"$ref": "input.path"}, "long"]},
             "steps": [task(f"s{i}", "s") for i in range(skipped)]},
            {"default": True, "steps": [task("short")]},
        ]},
        task("z"),
    ]))


def test_a_definition_larger_than_one_budget_continues_from_checkpoints(
    any_engine: Engine,
) -> None:
    engine = any_engine
    ns = new_namespace(engine)
    _big(engine, ns, 70)
    wid = start(engine, ns, "big", {"path": "other"}).instance.instance_id
    (claimed,) = work(engine, ns, handlers=["a"])
    report(engine, ns, claimed, {})
    # activating the branch and skipping 70 steps takes three advances of at most 32
    pend = [p for p in pending_of(engine, wid) if p.kind == "ROOT" and p.ref == ""]
    assert len(pend) == 1 and pend[0].state == "PENDING" and pend[0].reason == "budget"
    assert len(steps(engine, wid)) < 70
    for _ in range(5):
        run_tick(engine)
    st = steps(engine, wid)
    assert sum(1 for r in st.values() if r.phase == "SKIPPED") == 70
    ran = run_worker(engine, ns, {"short": {}, "z": {}})
    assert ran == ["short", "z"]
    assert instance(engine, wid).status == "SUCCEEDED"
    advanced = [a for a in audit_of(engine, wid) if a.action == "workflow.advanced"]
    assert len(advanced) == 2  # two continuations, each audited once
    assert all('"checkpoint_id":' in (a.metadata or "") for a in advanced)


def test_stale_checkpoint_recomputes_and_ahead_or_foreign_one_is_refused(
    engine: Engine,
) -> None:
    ns = new_namespace(engine)
    _big(engine, ns, 40)
    wid = start(engine, ns, "big", {"path": "other"}).instance.instance_id
    (claimed,) = work(engine, ns, handlers=["a"])
    report(engine, ns, claimed, {})
    (pend,) = [p for p in pending_of(engine, wid) if p.ref == ""]
    # stale: an older root version still recomputes from the locked snapshot
    p = weave_pending_advances
    engine.db.transaction(lambda c: c.execute(
        sa.update(p).where(p.c.id == pend.id).values(root_version=0)), name="t")
    assert run_pending(engine, pend.id).outcome == "advanced"
    assert sum(1 for r in steps(engine, wid).values() if r.phase == "SKIPPED") == 40
    # ahead of the instance: refused, instance to review
    root_version = instance(engine, wid).root_version
    engine.db.transaction(lambda c: c.execute(
        sa.update(p).where(p.c.id == pend.id).values(
            state="PENDING", root_version=root_version + 5)), name="t")
    result = run_pending(engine, pend.id)
    assert result.outcome == "refused"
    row = instance(engine, wid)
    assert row.status == "NEEDS_REVIEW" and row.review_reason == "checkpoint_refused"
    assert [x.state for x in pending_of(engine, wid) if x.id == pend.id] == ["REFUSED"]


def test_wrong_root_identity_is_refused(engine: Engine) -> None:
    ns = new_namespace(engine)
    _big(engine, ns, 40)
    wid = start(engine, ns, "big", {"path": "other"}).instance.instance_id
    (claimed,) = work(engine, ns, handlers=["a"])
    report(engine, ns, claimed, {})
    (pend,) = [p for p in pending_of(engine, wid) if p.ref == ""]
    p = weave_pending_advances
    engine.db.transaction(lambda c: c.execute(
        sa.update(p).where(p.c.id == pend.id).values(root_identity="other@9")), name="t")
    assert run_pending(engine, pend.id).outcome == "refused"
    assert sum(1 for r in steps(engine, wid).values() if r.phase == "SKIPPED") < 40


def test_quota_full_on_the_second_of_three_successors(engine: Engine, clock: None) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("fan3", [
        task("a"),
        {"id": "fan", "kind": "parallel", "branches": {
            "x": [task("x")], "y": [task("y")], "z": [task("z")]}},
    ]))
    wid = start(engine, ns, "fan3", {}).instance.instance_id
    set_namespace_quota(engine.db, ns, 1, actor="test")
    (claimed,) = work(engine, ns, handlers=["a"])
    results = report(engine, ns, claimed, {})
    assert [r.outcome.value for r in results] == ["consumed"]
    # the result is consumed and saved; no successor exists; one pending record
    assert [i.state for i in inbox_of(engine, wid)] == ["PROCESSED"]
    st = steps(engine, wid)
    assert st["a"].phase == "SUCCEEDED" and set(st) == {"a"}
    assert len(activations(engine, wid)) == 1 and len(tasks_of(engine, wid)) == 1
    roots = [p for p in pending_of(engine, wid) if p.ref == ""]
    assert len(roots) == 1 and roots[0].reason == "quota_exceeded"
    assert instance(engine, wid).status == "WAITING"
    audits = len(audit_of(engine, wid))
    revision = instance(engine, wid).revision
    # persistent fullness only moves the check time: no audit, no history, no usage
    for offset in (2, 5, 12, 30):
        set_clock_offset(engine.db, offset)
        assert run_pending(engine, roots[0].id).outcome in ("unchanged", "skipped")
    assert len(audit_of(engine, wid)) == audits
    assert instance(engine, wid).revision == revision
    assert len(tasks_of(engine, wid)) == 1
    assert len([p for p in pending_of(engine, wid) if p.ref == ""]) == 1
    # free the quota: it continues, once
    set_namespace_quota(engine.db, ns, 100, actor="test")
    set_clock_offset(engine.db, 120)
    run_tick(engine)
    run_tick(engine)
    assert sorted(t.handler for t in tasks_of(engine, wid)) == ["a", "x", "y", "z"]
    assert [a.action for a in audit_of(engine, wid)].count("workflow.advanced") == 1
    assert instance(engine, wid).status == "RUNNING"
    ran = run_worker(engine, ns, {"x": {}, "y": {}, "z": {}})
    assert sorted(ran) == ["x", "y", "z"]
    assert instance(engine, wid).status == "SUCCEEDED"


def test_paused_instance_saves_its_successors_and_continues_when_lifted(
    engine: Engine, clock: None
) -> None:
    from weave_core.storage.schema import weave_instances

    ns = new_namespace(engine)
    publish(engine, ns, definition("pz", [task("a"), task("b")]))
    wid = start(engine, ns, "pz", {}).instance.instance_id
    i = weave_instances
    # pause directly (the control API is issue 7): results are still saved
    engine.db.transaction(lambda c: c.execute(
        sa.update(i).where(i.c.instance_id == wid).values(paused=True)), name="t")
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, {})
    st = steps(engine, wid)
    assert st["a"].phase == "SUCCEEDED" and "b" not in st
    (root,) = [p for p in pending_of(engine, wid) if p.ref == ""]
    assert root.reason == "paused" and root.state == "PENDING"
    assert instance(engine, wid).status == "WAITING"
    audits = len(audit_of(engine, wid))
    set_clock_offset(engine.db, 5)
    run_tick(engine)  # still paused: the check time moves, nothing is recorded
    assert len(audit_of(engine, wid)) == audits and "b" not in steps(engine, wid)
    engine.db.transaction(lambda c: c.execute(
        sa.update(i).where(i.c.instance_id == wid).values(paused=False)), name="t")
    set_clock_offset(engine.db, 120)
    run_tick(engine)
    assert steps(engine, wid)["b"].phase == "ACTIVE"
    assert instance(engine, wid).status == "RUNNING"


def test_a_failing_pending_advance_is_retried_30s_later(engine: Engine) -> None:
    from weave_core.foundation.faults import armed

    ns = new_namespace(engine)
    _big(engine, ns, 40)
    wid = start(engine, ns, "big", {"path": "other"}).instance.instance_id
    (claimed,) = work(engine, ns, handlers=["a"])
    report(engine, ns, claimed, {})
    (pend,) = [p for p in pending_of(engine, wid) if p.ref == ""]
    revision = instance(engine, wid).revision
    with armed("runtime.audit"):
        assert run_pending(engine, pend.id).outcome == "deferred"
    (after,) = [p for p in pending_of(engine, wid) if p.ref == ""]
    assert after.state == "PENDING" and after.version == pend.version + 1
    assert (after.due_at - pend.due_at).total_seconds() >= 29
    assert instance(engine, wid).revision == revision  # nothing of it committed
