"""Unit tests of the SDK controls: the requests the handles and functions send, the answers
they read, sync and async. ``httpx.MockTransport`` stubs answer the documented JSON; the
server's behaviour is tested in tests/controls (and docs/sdk.md's live block)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

import weave_sdk
from tests.sdk.test_workflows_client import INSTANCE, answer, async_client, client, detail, problem
from weave_sdk import ConflictError, ReviewResult, loads

OPERATION = {"operation_id": "op-1", "kind": "recover", "actor": "token:rv", "reason": "r",
             "expected_version": 2, "step_id": "a", "activation_id": "act_1",
             "new_activation_id": "act_2", "conclusion": None, "evidence": None,
             "revision": 9, "created_at": "2025-01-02T00:00:00Z"}


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = loads(request.content) if request.content else None
        self.sent.append((request.method, request.url.path, body))
        if request.method == "GET":
            return answer(200, detail(control_version=3))
        if request.url.path.endswith("/review"):
            return answer(200, {"workflow": INSTANCE, "operation": OPERATION})
        if body and body.get("expected_control_version") == 0:
            return problem(409, "control_version_conflict", control_version=3)
        return answer(200, {**INSTANCE, "paused": request.url.path.endswith("/pause"),
                            "control_version": 4})


BASE = "/v1/namespaces/ns/workflows/wf_1"


def test_handle_controls_read_the_version_and_send_the_operation() -> None:
    rec = Recorder()
    with client(rec) as c:
        handle = c.get_workflow_handle("wf_1")
        paused = handle.pause(reason="window", operation_id="p-1")
        assert paused.paused is True and paused.control_version == 4
        assert rec.sent[0] == ("GET", BASE, None)  # the current control version, first
        assert rec.sent[1] == ("POST", BASE + "/pause", {
            "expected_control_version": 3, "operation_id": "p-1", "reason": "window"})
        handle.resume(reason="done", expected_control_version=4)
        _method, path, body = rec.sent[2]
        assert path == BASE + "/resume" and body["expected_control_version"] == 4
        assert len(body["operation_id"]) == 36  # a fresh uuid4
        with pytest.raises(ConflictError) as err:
            handle.cancel(reason="stop", expected_control_version=0)
        assert err.value.code == "control_version_conflict"


def test_handle_review_actions_send_their_fields() -> None:
    rec = Recorder()
    with client(rec) as c:
        handle = c.get_workflow_handle("wf_1")
        done = handle.conclude("a", "effect_confirmed_absent", reason="checked",
                               evidence={"ticket": "T-1"}, operation_id="c-1")
        assert isinstance(done, ReviewResult) and done.operation["kind"] == "recover"
        assert rec.sent[-1] == ("POST", BASE + "/review", {
            "action": "conclude", "operation_id": "c-1", "reason": "checked", "step_id": "a",
            "conclusion": "effect_confirmed_absent", "evidence": {"ticket": "T-1"}})
        handle.resolve(reason="all clear", outcome="failed", operation_id="r-1")
        assert rec.sent[-1][2] == {"action": "resolve", "operation_id": "r-1",
                                   "reason": "all clear", "outcome": "failed"}
        result = handle.recover("a", reason="outage over", operation_id="rc-1")
        assert result.operation["new_activation_id"] == "act_2"
        assert rec.sent[-2][0] == "GET"  # the step's state version, read first
        assert rec.sent[-1][2] == {"action": "recover", "operation_id": "rc-1",
                                   "reason": "outage over", "step_id": "a",
                                   "expected_state_version": 2}
        handle.review("recover", reason="x", step_id="a", expected_state_version=5,
                      operation_id="rc-2")
        last: Any = rec.sent[-1][2]
        assert last["expected_state_version"] == 5


def test_async_handle_and_functions() -> None:
    rec = Recorder()

    async def run() -> None:
        async with async_client(rec) as c:
            handle = c.get_workflow_handle("wf_1")
            assert (await handle.pause(reason="w")).paused is True
            assert (await handle.resume(reason="w", expected_control_version=4)).paused is False
            await handle.cancel(reason="stop", expected_control_version=4)
            await handle.conclude("a", "retry_safe", reason="dedup", evidence={"k": 1})
            await handle.resolve(reason="ok")
            await handle.recover("a", reason="again")
            await handle.review("resolve", reason="ok", outcome="cancelled")
            await weave_sdk.pause_async(c, "wf_1", reason="w", expected_control_version=1)

    asyncio.run(run())
    posts = [(p.rsplit("/", 1)[-1], b.get("action")) for m, p, b in rec.sent if m == "POST"]
    assert posts == [("pause", None), ("resume", None), ("cancel", None),
                     ("review", "conclude"), ("review", "resolve"), ("review", "recover"),
                     ("review", "resolve"), ("pause", None)]
    assert [m for m, _, _ in rec.sent].count("GET") == 2  # pause and recover read first


def test_the_functions_are_exported() -> None:
    for name in ("pause", "resume", "cancel", "review", "conclude", "resolve", "recover"):
        assert name in weave_sdk.__all__ and f"{name}_async" in weave_sdk.__all__
    assert "ReviewResult" in weave_sdk.__all__


def test_description_reads_operations_and_review() -> None:
    view = weave_sdk.WorkflowDescription.model_validate(detail(
        operations=[OPERATION], cancel_requested=True,
        review={"reason": "effect_unknown", "blocking_steps": [], "unknown_effects": []}))
    assert view.operations[0]["actor"] == "token:rv" and view.cancel_requested is True
    assert view.review is not None and view.review["reason"] == "effect_unknown"
    plain = weave_sdk.WorkflowDescription.model_validate(detail())
    assert plain.operations == [] and plain.cancel_requested is False and plain.review is None
