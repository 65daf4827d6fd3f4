"""End-to-end scenarios through HTTP and the SDK worker, shared by MariaDB and SQLite.

Each function publishes its definition in the namespace of ``env``, starts instances with
``client.start`` and watches them with the handle only (``result``, ``describe``,
``history``), exactly as a user would.
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from tests.e2e.conftest import E2E
from tests.e2e.handlers import QUEUE
from weave_sdk import (
    BranchStep,
    Case,
    Default,
    FailurePolicy,
    Handler,
    ParallelStep,
    TaskStep,
    Workflow,
    gt,
    ref,
)
from weave_sdk.workflows import WorkflowDescription, WorkflowStatus

RESULT_TIMEOUT = 60.0


def task(step_id: str, handler: str = "echo", input: Any = None, *,
         queue: str = QUEUE) -> TaskStep:
    return TaskStep(step_id, queue=queue, handler=Handler(handler, "1"),
                    input=input if input is not None else {})


def workflow(definition_id: str, *, schema: dict[str, Any] | None = None,
             policy: FailurePolicy = FailurePolicy.REVIEW) -> Workflow:
    return Workflow(definition_id, version="1", input_schema=schema or {"type": "object"},
                    failure_policy=policy)


def phases(view: WorkflowDescription) -> dict[str, str]:
    return {s.step_id: s.phase for s in view.steps}


def outputs(view: WorkflowDescription) -> dict[str, Any]:
    return {s.step_id: s.output for s in view.steps}


def assert_history_in_order(env: E2E, workflow_id: str, *, final: str) -> None:
    """Revisions 1..N with no gap; created first, the final status last; audit on each."""
    events = env.client.history(workflow_id)
    revisions = [e.revision for e in events]
    assert revisions == list(range(1, len(events) + 1)), revisions
    assert events[0].kind == "instance.created"
    statuses = [e for e in events if e.kind == "instance.status"]
    assert statuses and statuses[-1].to_state == final
    assert all(e.audit is not None and e.audit.object_id == workflow_id for e in events)
    times = [e.occurred_at for e in events]
    assert times == sorted(times)
    view = env.client.get_workflow(workflow_id)
    assert view.revision == revisions[-1]


# --- sequence ----------------------------------------------------------------------------


def sequence(env: E2E) -> None:
    wf = workflow("e2e-seq", schema={"type": "object", "required": ["n"],
                                     "properties": {"n": {"type": "integer"}}})
    first = wf.task("one", queue=QUEUE, handler=Handler("inc", "1"),
                    input={"n": ref.input("n")})
    second = wf.task("two", queue=QUEUE, handler=Handler("inc", "1"),
                     input={"n": first.output("n")})
    wf.task("three", queue=QUEUE, handler=Handler("inc", "1"), input={"n": second.output("n")})
    env.publish(wf)
    with env.worker():
        handle = env.client.start("e2e-seq", {"n": 9007199254740990})
        assert handle.created is True and handle.started is not None
        assert handle.started.status is WorkflowStatus.RUNNING
        assert handle.started.version == "1"
        # beyond 2**53: a float would have lost the last digit long before 3 increments
        assert handle.result(timeout=RESULT_TIMEOUT) == {"n": 9007199254740993}
    view = handle.describe()
    assert view.status is WorkflowStatus.SUCCEEDED and view.settled_at is not None
    assert phases(view) == {"one": "SUCCEEDED", "two": "SUCCEEDED", "three": "SUCCEEDED"}
    assert [t.status for t in view.tasks] == ["SUCCEEDED"] * 3
    assert len(view.activations) == 3
    assert_history_in_order(env, handle.workflow_id, final="SUCCEEDED")


# --- branch on an exact decimal ----------------------------------------------------------


BRANCH_CASES = (
    (Decimal("1000.10"), "small"),               # equal to 1000.1: not greater
    (Decimal("1000.11"), "big"),
    (Decimal("1000.1000000000000001"), "big"),   # float: 1000.1 exactly, so "not greater"
    (Decimal("1000.0999999999999999"), "small"),  # float: 1000.1 as well
)


def branch_on_decimal(env: E2E) -> None:
    wf = workflow("e2e-branch", schema={"type": "object", "required": ["amount"],
                                        "properties": {"amount": {"type": "number"}}})
    wf.branch("route", [
        Case(gt(ref.input("amount"), Decimal("1000.1")),
             [task("big", "tag", {"amount": ref.input("amount")})]),
        Default([task("small", "tag", {"amount": ref.input("amount")})]),
    ])
    wf.task("after", queue=QUEUE, handler=Handler("echo", "1"),
            input={"amount": ref.input("amount")})
    env.publish(wf)
    with env.worker():
        handles = [(env.client.start("e2e-branch", {"amount": amount}), amount, chosen)
                   for amount, chosen in BRANCH_CASES]
        for handle, amount, chosen in handles:
            output = handle.result(timeout=RESULT_TIMEOUT)
            assert output == {"amount": amount}
            assert isinstance(output["amount"], Decimal)  # exact, never a float
            view = handle.describe()
            other = "small" if chosen == "big" else "big"
            got = phases(view)
            assert got[chosen] == "SUCCEEDED", (amount, got)
            assert got.get(other, "SKIPPED") == "SKIPPED", (amount, got)
            assert outputs(view)[chosen]["input"] == {"amount": amount}


# --- parallel with a join -------------------------------------------------------------------


def parallel_join(env: E2E) -> None:
    wf = workflow("e2e-par")
    docs = task("fetch_docs", "tag", {"job": ref.input("job")})
    quote = task("quote", "echo", {"total": Decimal("12.50"), "job": ref.input("job")})
    check = task("check", "echo", {"ok": True})
    wf.parallel("prepare", {"docs": [docs], "quote": [quote, task("confirm", "echo",
                                                                  {"q": quote.output("total")})],
                            "check": [check]})
    wf.task("submit", queue=QUEUE, handler=Handler("echo", "1"), input={
        "docs_handler": docs.output("handler"),
        "total": quote.output("total"),
        "confirmed": ref.step("confirm").output("q"),
        "all": ref.step("prepare").output(),
    })
    env.publish(wf)
    with env.worker(concurrency=4):
        handle = env.client.start("e2e-par", {"job": "j-1"})
        output = handle.result(timeout=RESULT_TIMEOUT)
    assert output["docs_handler"] == "tag"
    assert output["total"] == Decimal("12.50") and output["confirmed"] == Decimal("12.50")
    # the parallel's output is keyed by branch name (the last step of each branch)
    assert set(output["all"]) == {"docs", "quote", "check"}
    assert output["all"]["quote"] == {"q": Decimal("12.50")}
    assert output["all"]["check"] == {"ok": True}
    view = handle.describe()
    assert set(phases(view).values()) == {"SUCCEEDED"}
    assert_history_in_order(env, handle.workflow_id, final="SUCCEEDED")


# --- nested composites --------------------------------------------------------------------


def nested(env: E2E) -> None:
    wf = workflow("e2e-nested", schema={
        "type": "object", "required": ["mode", "level"],
        "properties": {"mode": {"type": "string"}, "level": {"type": "integer"}}})
    inner = ParallelStep("inner", {
        "x": [task("x1", "echo", {"v": 1}), task("x2", "echo", {"v": 2})],
        "y": [task("y1", "echo", {"v": 3})],
    })
    route = BranchStep("route", [
        Case(gt(ref.input("level"), 5), [task("deep_pre", "noop"), inner]),
        Default([task("shallow", "echo", {"v": 0})]),
    ])
    wf.parallel("outer", {
        "left": [task("left0", "noop"), route],
        "right": [task("right0", "echo", {"side": "right"})],
    })
    wf.task("final", queue=QUEUE, handler=Handler("echo", "1"),
            input={"outer": ref.step("outer").output()})
    env.publish(wf)
    with env.worker():
        deep = env.client.start("e2e-nested", {"mode": "deep", "level": 7})
        shallow = env.client.start("e2e-nested", {"mode": "shallow", "level": 5})
        deep_out = deep.result(timeout=RESULT_TIMEOUT)
        shallow_out = shallow.result(timeout=RESULT_TIMEOUT)
    assert deep_out["outer"]["right"] == {"side": "right"}
    assert deep_out["outer"]["left"] == {"x": {"v": 2}, "y": {"v": 3}}
    assert shallow_out["outer"]["left"] == {"v": 0}
    deep_view, shallow_view = deep.describe(), shallow.describe()
    assert phases(deep_view).get("shallow", "SKIPPED") == "SKIPPED"
    assert {phases(deep_view)[s] for s in ("x1", "x2", "y1", "inner", "route", "outer")} == {
        "SUCCEEDED"}
    for step in ("x1", "x2", "y1", "inner", "deep_pre"):
        assert phases(shallow_view).get(step, "SKIPPED") == "SKIPPED"


# --- more than one budget ------------------------------------------------------------------


def _continued_from_checkpoint(env: E2E, workflow_id: str) -> list[Any]:
    return [e for e in env.client.history(workflow_id)
            if e.audit is not None and e.audit.action == "workflow.advanced"
            and isinstance(e.audit.metadata, dict)
            and "checkpoint_id" in (e.audit.metadata.get("source") or {})]


def wide_parallel(env: E2E, branches: int = 32) -> None:
    """Entering 32 branches is 33 structural changes, one over the budget of an advance.

    No worker runs at first, so no result can carry the advance on: only the ROOT
    checkpoint, continued by the tick, can activate the last branch's task.
    """
    wf = workflow("e2e-wide")
    wf.parallel("fan", {
        f"b{i}": [task(f"p{i}", "echo", {"i": i}), task(f"q{i}", "inc", {"n": i})]
        for i in range(branches)
    })
    wf.task("join", queue=QUEUE, handler=Handler("echo", "1"), input={
        "first": ref.step("q0").output("n"), "last": ref.step(f"q{branches - 1}").output("n"),
        "fan": ref.step("fan").output(),
    })
    env.publish(wf)
    handle = env.client.start("e2e-wide", {})
    start_events = env.client.history(handle.workflow_id)
    assert sum(1 for e in start_events if e.kind == "step.activated") <= 32  # the budget
    deadline = time.monotonic() + 15
    while len(handle.describe().tasks) < branches:
        assert time.monotonic() < deadline, "the checkpoint was not continued"
        time.sleep(0.1)
    assert _continued_from_checkpoint(env, handle.workflow_id)
    with env.worker(concurrency=8):
        output = handle.result(timeout=120)
    assert output["first"] == 1 and output["last"] == branches
    assert output["fan"] == {f"b{i}": {"n": i + 1} for i in range(branches)}
    view = handle.describe()
    assert len(view.tasks) == 2 * branches + 1
    assert len({t.step_id for t in view.tasks}) == len(view.tasks)  # one task per step
    assert_history_in_order(env, handle.workflow_id, final="SUCCEEDED")


def long_skip(env: E2E, skipped: int = 70) -> None:
    """An unselected case of 70 steps: skipping them takes three budgets."""
    wf = workflow("e2e-skip")
    wf.task("a", queue=QUEUE, handler=Handler("noop", "1"), input={})
    wf.branch("route", [
        Case(gt(ref.input("n"), 100), [task(f"s{i}", "noop") for i in range(skipped)]),
        Default([task("short", "echo", {"short": True})]),
    ])
    wf.task("z", queue=QUEUE, handler=Handler("echo", "1"), input={"done": True})
    env.publish(wf)
    with env.worker():
        handle = env.client.start("e2e-skip", {"n": 1})
        assert handle.result(timeout=120) == {"done": True}
    got = phases(handle.describe())
    assert sum(1 for p in got.values() if p == "SKIPPED") == skipped
    assert got["short"] == "SUCCEEDED"
    assert len(_continued_from_checkpoint(env, handle.workflow_id)) >= 2


# --- failure under REVIEW ---------------------------------------------------------------------


def failure_to_review(env: E2E) -> WorkflowDescription:
    wf = workflow("e2e-review")
    wf.task("ok", queue=QUEUE, handler=Handler("noop", "1"), input={})
    wf.task("bad", queue=QUEUE, handler=Handler("refuse", "1"), input={"why": "policy"})
    wf.task("never", queue=QUEUE, handler=Handler("noop", "1"), input={})
    env.publish(wf)
    from weave_sdk.workflows import WorkflowNeedsReviewError

    with env.worker():
        handle = env.client.start("e2e-review", {})
        try:
            handle.result(timeout=RESULT_TIMEOUT)
        except WorkflowNeedsReviewError as exc:
            error = exc
        else:
            raise AssertionError("the instance did not go to review")
    assert error.workflow_id == handle.workflow_id
    assert error.status is WorkflowStatus.NEEDS_REVIEW
    assert error.review_reason == "task_failed"
    view = handle.describe()
    assert view.status is WorkflowStatus.NEEDS_REVIEW and view.settled_at is None
    got = phases(view)
    assert got["ok"] == "SUCCEEDED" and got["bad"] == "FAILED" and "never" not in got
    (failed,) = [t for t in view.tasks if t.step_id == "bad"]
    assert failed.status == "FAILED"
    assert failed.error["type"] == "business_refusal"
    assert failed.error["retryable"] is False
    return view
