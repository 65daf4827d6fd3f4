"""Failure policies, review conclusions, resolve and recovery (R-8.4, R-8.5), on MariaDB."""

from __future__ import annotations

from typing import Any

import pytest

from tests.controls.helpers import control, do_conclude, do_recover, do_resolve
from tests.runtime.helpers import (
    activations,
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
from weave_core.dispatch import (
    AttemptSupersededError,
    Report,
    ReportOutcome,
    complete,
    sweep_expired_leases,
)
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.runtime import run_tick
from weave_core.runtime.controls.errors import (
    CancelRequestedError,
    EffectPresentError,
    EffectUnknownError,
    EvidenceRequiredError,
    ReviewBlockedError,
    StateVersionConflictError,
    StepNotFoundError,
    StepNotInReviewError,
    StepSucceededError,
    WorkflowSettledError,
    WorkUnsettledError,
)
from weave_core.runtime.reads import read_history
from weave_core.storage.db import set_clock_offset

EVIDENCE = {"ticket": "OPS-1", "checked": "partner API shows no job"}


def _unsafe(step_id: str, **extra: Any) -> dict[str, Any]:
    step = task(step_id)
    step["handler"]["idempotent"] = False
    step.update(extra)
    return step


def _ns(engine: Engine, doc: dict[str, Any]) -> tuple[str, str]:
    ns = new_namespace(engine)
    publish(engine, ns, doc)
    return ns, start(engine, ns, doc["definition_id"]).instance.instance_id


def _lose_lease(engine: Engine, ns: str, handler: str) -> Any:
    (claimed,) = work(engine, ns, handlers=[handler])
    set_clock_offset(engine.db, 3600)
    try:
        sweep_expired_leases(engine)
        run_tick(engine)
    finally:
        set_clock_offset(engine.db, 0)
    return claimed


def test_review_policy_failure_goes_to_review_and_is_recovered(engine: Engine) -> None:
    ns, wid = _ns(engine, definition("rv", [task("a"), task("b")]))
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, fail=True)
    row = instance(engine, wid)
    assert row.status == "NEEDS_REVIEW" and steps(engine, wid)["a"].phase == "FAILED"
    with pytest.raises(ReviewBlockedError):
        do_resolve(engine, ns, wid)
    version = int(steps(engine, wid)["a"].version)
    with pytest.raises(StateVersionConflictError):
        do_recover(engine, ns, wid, "a", version - 1)
    with pytest.raises(StepNotFoundError):
        do_recover(engine, ns, wid, "b", 1)
    out = do_recover(engine, ns, wid, "a", version).body  # a known failure of an idempotent step
    assert out["workflow"]["status"] == "RUNNING"
    assert out["operation"]["kind"] == "review.recover"
    acts = [x for x in activations(engine, wid) if x.step_id == "a"]
    assert [x.state for x in acts] == ["FAILED", "ACTIVE"]  # the old one is kept
    old_cmd, new_cmd = (exactjson.loads(x.command) for x in acts)
    assert {**old_cmd, "retry": None} == {**new_cmd, "retry": None}  # same input and identity
    assert new_cmd["retry"]["max_attempts"] == 2  # 3 per definition, 1 spent: not reset
    old_task, new_task = sorted((t for t in tasks_of(engine, wid)), key=lambda t: t.created_at)
    assert old_task.status == "FAILED" and new_task.status == "PENDING"
    assert new_task.max_attempts == 2 and new_task.attempts_used == 0
    (again,) = work(engine, ns, handlers=["a"])
    report(engine, ns, again, {})
    (b,) = work(engine, ns, handlers=["b"])
    report(engine, ns, b, {})
    assert instance(engine, wid).status == "SUCCEEDED"


def test_succeeded_step_is_never_rerun(engine: Engine) -> None:
    ns, wid = _ns(engine, definition("ok", [task("a"), task("b")]))
    report(engine, ns, work(engine, ns, handlers=["a"])[0], {})
    report(engine, ns, work(engine, ns, handlers=["b"])[0], fail=True)
    with pytest.raises(StepSucceededError):
        do_recover(engine, ns, wid, "a", int(steps(engine, wid)["a"].version))
    with pytest.raises(StepNotInReviewError):
        do_conclude(engine, ns, wid, "a", "effect_confirmed_absent", EVIDENCE)


def test_unknown_effect_needs_evidence_then_recovers_and_completes(engine: Engine) -> None:
    ns, wid = _ns(engine, definition("uk", [_unsafe("submit"), task("after")]))
    claimed = _lose_lease(engine, ns, "submit")
    row = instance(engine, wid)
    assert row.status == "NEEDS_REVIEW" and row.review_reason == "effect_unknown"
    version = int(steps(engine, wid)["submit"].version)
    with pytest.raises(EvidenceRequiredError):
        do_recover(engine, ns, wid, "submit", version)  # "no response" is not a reason
    do_conclude(engine, ns, wid, "submit", "effect_unknown")
    with pytest.raises(EvidenceRequiredError):
        do_recover(engine, ns, wid, "submit", version)
    with pytest.raises(EffectUnknownError):
        do_resolve(engine, ns, wid, "failed")  # unknown effect never settles as FAILED
    do_conclude(engine, ns, wid, "submit", "effect_confirmed_absent", EVIDENCE)
    do_recover(engine, ns, wid, "submit", version)
    # the slow worker of the lost lease reports late: refused, nothing changes
    with pytest.raises(AttemptSupersededError):
        complete(engine.db, namespace=ns, task_id=claimed.task_id,
                 attempt_id=claimed.attempt_id,
                 report=Report(ReportOutcome.SUCCEEDED, output={}), actor="worker:slow")
    report(engine, ns, work(engine, ns, handlers=["submit"])[0], {"job": 1})
    report(engine, ns, work(engine, ns, handlers=["after"])[0], {})
    assert instance(engine, wid).status == "SUCCEEDED"
    acts = [x for x in activations(engine, wid) if x.step_id == "submit"]
    assert [x.state for x in acts] == ["NEEDS_REVIEW", "SUCCEEDED"]
    items, _ = read_history(engine.db, ns, wid, limit=400)
    submit_acts = {i["activation_id"] for i in items
                   if i["step_id"] == "submit" and i["activation_id"]}
    assert submit_acts == {a.activation_id for a in acts}
    recovered = [i for i in items if i["kind"] == "step.recovered"]
    assert recovered and recovered[0]["audit"]["actor"] == "token:operator"


def test_effect_present_forbids_rerun_and_allows_failed(engine: Engine) -> None:
    ns, wid = _ns(engine, definition("pr", [_unsafe("submit")]))
    _lose_lease(engine, ns, "submit")
    do_conclude(engine, ns, wid, "submit", "effect_confirmed_present", EVIDENCE)
    with pytest.raises(EffectPresentError):
        do_recover(engine, ns, wid, "submit", int(steps(engine, wid)["submit"].version))
    out = do_resolve(engine, ns, wid, "failed").body
    assert out["workflow"]["status"] == "FAILED"
    with pytest.raises(WorkflowSettledError):  # terminal statuses never move back
        do_resolve(engine, ns, wid, "continue")


def test_recover_inline_conclusion_and_evidence_rules(engine: Engine) -> None:
    ns, wid = _ns(engine, definition("il", [_unsafe("submit")]))
    _lose_lease(engine, ns, "submit")
    version = int(steps(engine, wid)["submit"].version)
    from weave_core.foundation.errors import ValidationError

    with pytest.raises(ValidationError):  # a safe conclusion needs evidence
        do_recover(engine, ns, wid, "submit", version, conclusion="retry_safe")
    out = do_recover(engine, ns, wid, "submit", version, conclusion="retry_safe",
                     evidence={"dedupe": "partner dedupes on job_id"}).body
    assert out["operation"]["conclusion"] == "retry_safe"
    (t,) = [t for t in tasks_of(engine, wid) if t.status == "PENDING"]
    assert t.max_attempts == 2  # 3 per definition, 1 spent on the lost lease


def test_fail_after_settled_cancels_siblings_then_fails(engine: Engine) -> None:
    doc = definition("fas", [{"id": "p", "kind": "parallel", "branches": {
        "x": [task("x")], "y": [task("y")]}}], failure_policy="FAIL_AFTER_SETTLED")
    ns, wid = _ns(engine, doc)
    x, y = sorted(work(engine, ns, handlers=["x", "y"]), key=lambda c: c.handler)
    report(engine, ns, x, fail=True)
    row = instance(engine, wid)
    assert row.status == "CANCELLING"
    assert work(engine, ns, handlers=["x", "y"]) == []
    report(engine, ns, y, cancel=True)
    assert instance(engine, wid).status == "FAILED"


def test_fail_after_settled_with_unknown_effect_goes_to_review(engine: Engine) -> None:
    doc = definition("fau", [{"id": "p", "kind": "parallel", "branches": {
        "x": [task("x")], "y": [_unsafe("y")]}}], failure_policy="FAIL_AFTER_SETTLED")
    ns, wid = _ns(engine, doc)
    x, _y = sorted(work(engine, ns, handlers=["x", "y"]), key=lambda c: c.handler)
    report(engine, ns, x, fail=True)
    assert instance(engine, wid).status == "CANCELLING"
    set_clock_offset(engine.db, 3600)
    try:
        sweep_expired_leases(engine)
        run_tick(engine)
    finally:
        set_clock_offset(engine.db, 0)
    row = instance(engine, wid)
    assert row.status == "NEEDS_REVIEW" and row.review_reason == "effect_unknown"
    do_conclude(engine, ns, wid, "y", "effect_confirmed_absent", EVIDENCE)
    assert do_resolve(engine, ns, wid, "failed").body["workflow"]["status"] == "FAILED"


def test_cancel_in_review_keeps_intent_until_effects_are_concluded(engine: Engine) -> None:
    ns, wid = _ns(engine, definition("cr", [_unsafe("submit"), task("after")]))
    _lose_lease(engine, ns, "submit")
    body = control(engine, ns, wid, "cancel").body
    assert body["status"] == "NEEDS_REVIEW"  # an unknown effect never settles as CANCELLED
    version = int(steps(engine, wid)["submit"].version)
    with pytest.raises(CancelRequestedError):
        do_recover(engine, ns, wid, "submit", version, conclusion="effect_confirmed_absent",
                   evidence=EVIDENCE)
    with pytest.raises(CancelRequestedError):
        do_resolve(engine, ns, wid, "continue")
    with pytest.raises(EffectUnknownError):
        do_resolve(engine, ns, wid, "cancelled")
    do_conclude(engine, ns, wid, "submit", "effect_confirmed_absent", EVIDENCE)
    assert do_resolve(engine, ns, wid, "cancelled").body["workflow"]["status"] == "CANCELLED"
    kinds = [t.kind for t in transitions_of(engine, wid)]
    assert kinds.count("review.concluded") == 1 and "review.resolved" in kinds


def test_resolve_refuses_unsettled_work(engine: Engine) -> None:
    doc = definition("ru", [{"id": "p", "kind": "parallel", "branches": {
        "x": [task("x")], "y": [task("y")]}}])
    ns, wid = _ns(engine, doc)
    x, _y = sorted(work(engine, ns, handlers=["x", "y"]), key=lambda c: c.handler)
    report(engine, ns, x, fail=True)
    assert instance(engine, wid).status == "NEEDS_REVIEW"
    with pytest.raises(WorkUnsettledError):
        do_resolve(engine, ns, wid, "failed")
