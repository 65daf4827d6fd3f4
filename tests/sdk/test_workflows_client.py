"""Unit tests of the workflow half of the clients: requests built, answers read, polling.

``httpx.MockTransport`` stubs answer the documented JSON of DESIGN.md §10; they are NOT
evidence of the server's behaviour (``tests/e2e`` runs the same calls against it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from weave_sdk import (
    AsyncClient,
    Client,
    ConflictError,
    InvalidResponseError,
    NotFoundError,
    ValidationError,
    WorkflowCancelledError,
    WorkflowDescription,
    WorkflowFailedError,
    WorkflowHandle,
    WorkflowNeedsReviewError,
    WorkflowStatus,
    WorkflowTimeoutError,
    dumps,
    loads,
)

Handler = Callable[[httpx.Request], httpx.Response]

INSTANCE: dict[str, Any] = {
    "workflow_id": "wf_1", "namespace": "ns", "definition_id": "d", "version": "3",
    "status": "RUNNING", "paused": False, "control_version": 0, "revision": 4,
    "input": {"amount": Decimal("1000.10"), "big": 9007199254740993}, "output": None,
    "review_reason": None, "failure_policy": "REVIEW",
    "deadline_at": "2025-01-03T00:00:00Z", "operation_type": "start",
    "idempotency_key": "k", "created_by": "token:t", "created_at": "2025-01-02T00:00:00.5Z",
    "updated_at": "2025-01-02T00:00:01Z", "settled_at": None,
}
STEP = {"step_id": "a", "phase": "SUCCEEDED", "version": 2, "output": {"x": Decimal("0.1")},
        "decision": None, "activation_id": "act_1", "reason": None,
        "created_at": "2025-01-02T00:00:00Z", "updated_at": "2025-01-02T00:00:00Z"}
TASK = {"task_id": "tsk_1", "step_id": "a", "activation_id": "act_1", "queue": "q",
        "handler": "h", "handler_version": "1", "status": "SUCCEEDED", "revision": 3,
        "attempts_used": 1, "max_attempts": 3, "effect_unknown": False,
        "result": {"x": Decimal("0.1")}, "error": None, "deadline_at": None,
        "created_at": "2025-01-02T00:00:00Z", "updated_at": "2025-01-02T00:00:00Z"}
ACTIVATION = {"activation_id": "act_1", "step_id": "a", "kind": "task", "state": "SUCCEEDED",
              "state_version": 2, "task_id": "tsk_1", "poll_round": None, "command": {},
              "result_revision": 3, "reason": None, "created_at": "2025-01-02T00:00:00Z",
              "settled_at": "2025-01-02T00:00:01Z"}


def detail(**changes: Any) -> dict[str, Any]:
    return {**INSTANCE, "steps": [STEP], "activations": [ACTIVATION], "tasks": [TASK],
            "pending": [{"id": 7, "kind": "ROOT", "ref": "", "reason": "budget",
                         "due_at": "2025-01-02T00:00:02Z"}], **changes}


def event(revision: int) -> dict[str, Any]:
    return {"revision": revision, "occurred_at": "2025-01-02T00:00:00Z", "kind": "step.activated",
            "step_id": "a", "activation_id": "act_1", "from_state": None, "to_state": "ACTIVE",
            "reason": None, "details": {"n": Decimal("1.5")}, "operation_id": "op_1",
            "audit_id": 9, "audit": {"id": 9, "namespace": "ns",
                                     "occurred_at": "2025-01-02T00:00:00Z", "actor": "token:t",
                                     "action": "workflow.started", "object_type": "workflow",
                                     "object_id": "wf_1", "operation_id": "op_1",
                                     "metadata": {"revision": revision}}}


def answer(status: int, body: Any) -> httpx.Response:
    return httpx.Response(status, content=dumps(body),
                          headers={"content-type": "application/json"})


def problem(status: int, code: str, **extra: Any) -> httpx.Response:
    body = {"type": "about:blank", "title": "t", "status": status, "code": code,
            "detail": "d", **extra}
    return httpx.Response(status, content=dumps(body),
                          headers={"content-type": "application/problem+json"})


def old_server() -> httpx.Response:
    """How a server without ``GET …/result`` answers it: ``result()`` falls back to polling."""
    return problem(404, "route_not_found")


def client(handler: Handler) -> Client:
    return Client("http://weave.test", "tok", "ns", transport=httpx.MockTransport(handler))


def async_client(handler: Handler) -> AsyncClient:
    return AsyncClient("http://weave.test", "tok", "ns", transport=httpx.MockTransport(handler))


def query(request: httpx.Request) -> dict[str, list[str]]:
    return parse_qs(urlsplit(str(request.url)).query)


# --- start -----------------------------------------------------------------------------


def test_start_sends_exact_json_and_returns_a_handle() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer(201 if len(seen) == 1 else 200, INSTANCE)

    with client(handler) as c:
        handle = c.start("d", {"amount": Decimal("1000.10"), "big": 9007199254740993},
                         version="3", idempotency_key="k")
        again = c.start("d", {"amount": Decimal("1000.10"), "big": 9007199254740993},
                        version="3", idempotency_key="k", operation_type="import")
    assert isinstance(handle, WorkflowHandle) and handle.workflow_id == "wf_1"
    assert handle.created is True and again.created is False
    assert handle.started is not None
    assert handle.started.input == {"amount": Decimal("1000.10"), "big": 9007199254740993}
    assert handle.started.status is WorkflowStatus.RUNNING
    assert handle.started.created_at == datetime(2025, 1, 2, 0, 0, 0, 500000, tzinfo=UTC)
    request = seen[0]
    assert request.method == "POST" and request.url.path == "/v1/namespaces/ns/workflows"
    assert request.headers["authorization"] == "Bearer tok"
    assert request.content == (b'{"definition_id":"d","version":"3","input":{"amount":1000.10,'
                               b'"big":9007199254740993},"idempotency_key":"k"}')
    assert loads(seen[1].content)["operation_type"] == "import"


def test_start_without_a_key_generates_a_fresh_uuid4() -> None:
    keys: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = loads(request.content)
        keys.append(body["idempotency_key"])
        assert body["version"] == "latest" and "operation_type" not in body
        return answer(201, INSTANCE)

    with client(handler) as c:
        c.start("d", {})
        c.start("d", {})
    assert len(keys) == 2 and keys[0] != keys[1]
    assert all(len(k) == 32 and int(k, 16) >= 0 for k in keys)


def test_start_refuses_float_and_maps_errors() -> None:
    answers = iter([problem(409, "idempotency_conflict", details={"workflow_id": "wf_1"}),
                    problem(404, "not_found"),
                    problem(422, "validation_failed", problems=[
                        {"path": "$.input.amount", "code": "schema_violation", "message": "m"}])])
    with client(lambda request: next(answers)) as c:
        with pytest.raises(TypeError, match="not exact"):
            c.start("d", {"amount": 1.1})
        with pytest.raises(ConflictError) as conflict:
            c.start("d", {})
        assert conflict.value.problem["details"] == {"workflow_id": "wf_1"}
        with pytest.raises(NotFoundError):
            c.start("d", {})
        with pytest.raises(ValidationError) as invalid:
            c.start("d", {})
        assert [p.path for p in invalid.value.problems] == ["$.input.amount"]


def test_unexpected_shapes_are_invalid_responses() -> None:
    with client(lambda request: answer(201, {"workflow_id": "wf_1"})) as c:
        with pytest.raises(InvalidResponseError):
            c.start("d", {})
    with client(lambda request: answer(200, {**INSTANCE, "status": "DANCING"})) as c:
        with pytest.raises(InvalidResponseError):
            c.get_workflow("wf_1")


# --- reads -------------------------------------------------------------------------------


def test_get_workflow_reads_steps_tasks_and_pending_exactly() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.raw_path == b"/v1/namespaces/ns/workflows/wf%2F1"
        return answer(200, detail())

    with client(handler) as c:
        view = c.get_workflow("wf/1")
    assert isinstance(view, WorkflowDescription)
    assert view.step("a").output == {"x": Decimal("0.1")}
    assert view.tasks[0].result == {"x": Decimal("0.1")}
    assert view.activations[0].state_version == 2
    assert view.pending[0].reason == "budget"
    with pytest.raises(KeyError):
        view.step("zz")


def test_list_workflows_follows_the_cursor_with_the_filters() -> None:
    seen: list[dict[str, list[str]]] = []
    pages = {None: (["wf_3", "wf_2"], "c1"), "c1": (["wf_1"], None)}

    def handler(request: httpx.Request) -> httpx.Response:
        q = query(request)
        seen.append(q)
        ids, cursor = pages[q.get("cursor", [None])[0]]
        return answer(200, {"items": [{**INSTANCE, "workflow_id": i} for i in ids],
                            "next_cursor": cursor})

    after = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    with client(handler) as c:
        items = list(c.list_workflows(status=WorkflowStatus.RUNNING, definition_id="d",
                                      version="3", paused=False, created_after=after,
                                      created_before=datetime(2025, 2, 1), page_size=2))
    assert [w.workflow_id for w in items] == ["wf_3", "wf_2", "wf_1"]
    assert seen[0] == {"status": ["RUNNING"], "definition_id": ["d"], "version": ["3"],
                       "paused": ["false"], "created_after": ["2025-01-02T01:04:05Z"],
                       "created_before": ["2025-02-01T00:00:00Z"], "limit": ["2"]}
    assert seen[1]["cursor"] == ["c1"]


def test_list_page_and_bad_status() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert query(request) == {"paused": ["true"], "cursor": ["c"], "limit": ["5"]}
        return answer(200, {"items": [], "next_cursor": None})

    with client(handler) as c:
        page = c.list_workflows_page(paused=True, cursor="c", limit=5)
        assert page.items == [] and page.next_cursor is None
        with pytest.raises(ValueError):
            c.list_workflows_page(status="DANCING")


def test_history_reads_every_page_in_order() -> None:
    seen: list[dict[str, list[str]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/namespaces/ns/workflows/wf_1/history"
        q = query(request)
        seen.append(q)
        after = int(q.get("after", ["0"])[0])
        revisions = [r for r in (1, 2, 3, 4, 5) if r > after][:2]
        more = revisions[-1] < 5
        return answer(200, {"items": [event(r) for r in revisions],
                            "next_cursor": revisions[-1] if more else None})

    with client(handler) as c:
        events = c.history("wf_1", page_size=2)
    assert [e.revision for e in events] == [1, 2, 3, 4, 5]
    assert events[0].details == {"n": Decimal("1.5")}
    assert events[0].audit is not None and events[0].audit.action == "workflow.started"
    assert [q.get("after") for q in seen] == [None, ["2"], ["4"]]


# --- result --------------------------------------------------------------------------------


def sequence_of(*statuses: str, output: Any = None, reason: str | None = None) -> Handler:
    answers = iter(statuses)

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/result"):
            return old_server()
        status = next(answers)
        return answer(200, detail(status=status, output=output if status == "SUCCEEDED" else None,
                                  review_reason=reason))

    return handler


def test_result_polls_until_succeeded_and_returns_the_output() -> None:
    handler = sequence_of("RUNNING", "WAITING", "RUNNING", "SUCCEEDED",
                          output={"total": Decimal("2.20")})
    with client(handler) as c:
        handle = c.get_workflow_handle("wf_1")
        assert handle.result(timeout=5, poll_initial=0.001, poll_max=0.002) == {
            "total": Decimal("2.20")}


@pytest.mark.parametrize(("status", "error"), [
    ("FAILED", WorkflowFailedError),
    ("CANCELLED", WorkflowCancelledError),
    ("NEEDS_REVIEW", WorkflowNeedsReviewError),
])
def test_result_raises_the_typed_error_with_the_view(status: str, error: type[Exception]) -> None:
    with client(sequence_of("RUNNING", status, reason="task_failed")) as c:
        with pytest.raises(error) as raised:
            c.get_workflow_handle("wf_1").result(timeout=5, poll_initial=0.001)
    assert raised.value.workflow.status.value == status  # type: ignore[attr-defined]  # WorkflowError
    assert raised.value.workflow_id == "wf_1"  # type: ignore[attr-defined]  # WorkflowError
    if status == "NEEDS_REVIEW":
        assert raised.value.review_reason == "task_failed"  # type: ignore[attr-defined]


def test_result_times_out_with_the_last_view() -> None:
    reads = [0]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/result"):
            return old_server()
        reads[0] += 1
        return answer(200, detail())

    with client(handler) as c:
        with pytest.raises(WorkflowTimeoutError) as raised:
            c.get_workflow_handle("wf_1").result(timeout=0.05, poll_initial=0.01, poll_max=0.01)
        assert isinstance(raised.value, TimeoutError)
        assert raised.value.timeout == 0.05 and raised.value.workflow.status.value == "RUNNING"
        assert 2 <= reads[0] <= 10
        with pytest.raises(WorkflowTimeoutError):
            c.get_workflow_handle("wf_1").result(timeout=0)
        with pytest.raises(ValueError):
            c.get_workflow_handle("wf_1").result(timeout=-1)
        with pytest.raises(ValueError):
            c.get_workflow_handle("")


# --- async ---------------------------------------------------------------------------------


def test_async_client_start_list_history_and_result() -> None:
    statuses = iter(["RUNNING", "SUCCEEDED"])

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.method == "POST":
            return answer(201, INSTANCE)
        if path.endswith("/history"):
            return answer(200, {"items": [event(1)], "next_cursor": None})
        if path.endswith("/result"):
            return problem(405, "method_not_allowed")  # another kind of older server
        if path.endswith("/workflows"):
            cursor = query(request).get("cursor")
            ids = ["wf_2"] if cursor else ["wf_1"]
            return answer(200, {"items": [{**INSTANCE, "workflow_id": i} for i in ids],
                                "next_cursor": None if cursor else "c"})
        status = next(statuses)
        return answer(200, detail(status=status, output={"ok": True}))

    async def run() -> None:
        async with async_client(handler) as c:
            handle = await c.start("d", {"n": 1})
            assert handle.created is True
            assert [e.revision for e in await handle.history()] == [1]
            assert [w.workflow_id async for w in c.list_workflows()] == ["wf_1", "wf_2"]
            assert (await c.list_workflows_page()).next_cursor == "c"
            assert await handle.result(timeout=5, poll_initial=0.001) == {"ok": True}

    asyncio.run(run())


def test_async_result_errors() -> None:
    async def run() -> None:
        async with async_client(sequence_of("NEEDS_REVIEW", reason="effect_unknown")) as c:
            with pytest.raises(WorkflowNeedsReviewError) as raised:
                await c.get_workflow_handle("wf_1").result()
            assert raised.value.review_reason == "effect_unknown"
        async with async_client(lambda request: old_server() if request.url.path.endswith(
                "/result") else answer(200, detail())) as c:
            with pytest.raises(WorkflowTimeoutError):
                await c.get_workflow_handle("wf_1").result(timeout=0.02, poll_initial=0.005)

    asyncio.run(run())
