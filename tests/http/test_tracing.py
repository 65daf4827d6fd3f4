"""One step's trace joins the server's spans and the worker's (issue #13 item 2).

An in-process server on MariaDB traces into the SDK's in-memory exporter; the SDK worker
(same process, so the same global tracer provider) continues the claimed task's
``traceparent``. Every span of one step shares the task's trace id, and the parent links
run root → claimed → handler and root → complete → the step transaction.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from weave_core.access.identity import Permission, create_namespace, create_token
from weave_core.engine import Engine
from weave_core.observability import tracing
from weave_http.app import create_app
from weave_sdk import Client, Workflow, handler
from weave_sdk.worker import Worker

_exporter = InMemorySpanExporter()
_provider = tracing.build_provider(SimpleSpanProcessor(_exporter))


@pytest.fixture
def traced() -> Iterator[InMemorySpanExporter]:
    """The engine and the process's global provider trace into the in-memory exporter."""
    if trace.get_tracer_provider() is not _provider:
        trace.set_tracer_provider(_provider)  # the API allows it once per process
    tracing.configure(_provider)
    _exporter.clear()
    try:
        yield _exporter
    finally:
        tracing.configure(None)


@pytest.fixture
def server(mysql_url: str) -> Iterator[tuple[str, str, str]]:
    engine = Engine.open(mysql_url)
    ns = f"trace-{time.monotonic_ns() % 10**9}"
    create_namespace(engine.db, ns)
    token = create_token(engine.db, ns, [Permission.ADMIN])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(create_app(engine), log_level="warning", lifespan="on")
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not uv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", token, ns
    finally:
        uv.should_exit = True
        thread.join(10)
        sock.close()
        engine.close()


@handler("trace_first")
def trace_first(data: object) -> dict[str, int]:
    return {"n": 1}


@handler("trace_second")
def trace_second(data: object) -> dict[str, int]:
    return {"n": 2}


def _ids(span: ReadableSpan) -> tuple[int, int]:
    ctx = span.get_span_context()
    assert ctx is not None
    return ctx.trace_id, ctx.span_id


def test_a_steps_server_and_worker_spans_are_one_trace(
    traced: InMemorySpanExporter, server: tuple[str, str, str],
) -> None:
    base, token, ns = server
    wf = Workflow("traced", version="1", queue="traced", input_schema={"type": "object"})
    wf.task("first", handler=trace_first, input={})
    wf.task("second", handler=trace_second, input={})
    with Client(base, token, ns) as client:
        client.publish(wf)
        with Worker(client, queue="traced", handlers=[trace_first, trace_second],
                    wait_seconds=1).running():
            assert client.start("traced", {}).result(timeout=30) == {"n": 2}
    spans = traced.get_finished_spans()
    roots = [s for s in spans if s.name == "weave.task"]
    assert len(roots) == 2, [s.name for s in spans]
    for root in roots:
        task_id = str(root.attributes["weave.task_id"])  # type: ignore[index]
        trace_id, root_id = tracing.task_ids(task_id)
        assert _ids(root) == (trace_id, root_id) and root.parent is None
        mine = [s for s in spans if _ids(s)[0] == trace_id]
        by_name = {s.name: s for s in mine}
        claimed = by_name["weave.task.claimed"]
        handled = next(s for s in mine if s.name.startswith("weave.handler "))
        complete = by_name["weave.task.complete"]
        assert claimed.parent is not None and claimed.parent.span_id == root_id
        # The worker's span continues the traceparent the claim handed it.
        assert handled.parent is not None and handled.parent.span_id == _ids(claimed)[1]
        assert handled.kind == trace.SpanKind.CONSUMER
        assert handled.attributes["weave.task_id"] == task_id  # type: ignore[index]
        assert complete.parent is not None and complete.parent.span_id == root_id
        step = by_name["transaction step"]  # the report consumed in one transaction
        assert step.parent is not None and step.parent.span_id == _ids(complete)[1]
    # The second task's root links back to the step of the first that created it.
    second = next(r for r in roots if any(s.name == "weave.handler trace_second" and
                                          _ids(s)[0] == _ids(r)[0] for s in spans))
    first = next(r for r in roots if r is not second)
    assert second.links and second.links[0].context.trace_id == _ids(first)[0]
    # Every HTTP request had its server span.
    http = [s for s in spans if s.kind == trace.SpanKind.SERVER]
    assert any(s.name == "POST /v1/namespaces/{ns}/queues/{queue}/claim" for s in http)
    assert any(s.attributes.get("http.response.status_code") == 200  # type: ignore[union-attr]
               for s in http)


def test_without_tracing_the_claimed_task_has_no_traceparent(
    server: tuple[str, str, str],
) -> None:
    import httpx

    base, token, ns = server
    headers = {"authorization": f"Bearer {token}"}
    created = httpx.post(f"{base}/v1/namespaces/{ns}/tasks", headers=headers, json={
        "queue": "plain", "handler": "h", "handler_version": "1", "input": {}}, timeout=10)
    assert created.status_code == 201, created.text
    answer = httpx.post(f"{base}/v1/namespaces/{ns}/queues/plain/claim", headers=headers,
                        json={"worker_id": "w", "handlers": [{"name": "h", "version": "1"}],
                              "max_tasks": 1, "wait_seconds": 0}, timeout=10)
    assert answer.status_code == 200
    [task] = answer.json()["tasks"]
    assert "traceparent" not in task


def test_with_tracing_the_claimed_task_carries_a_w3c_traceparent(
    traced: InMemorySpanExporter, server: tuple[str, str, str],
) -> None:
    import httpx

    base, token, ns = server
    headers = {"authorization": f"Bearer {token}"}
    created = httpx.post(f"{base}/v1/namespaces/{ns}/tasks", headers=headers, json={
        "queue": "plain", "handler": "h", "handler_version": "1", "input": {}}, timeout=10)
    task_id = created.json()["task_id"]
    answer = httpx.post(f"{base}/v1/namespaces/{ns}/queues/plain/claim", headers=headers,
                        json={"worker_id": "w", "handlers": [{"name": "h", "version": "1"}],
                              "max_tasks": 1, "wait_seconds": 0}, timeout=10)
    [task] = answer.json()["tasks"]
    version, trace_hex, span_hex, flags = task["traceparent"].split("-")
    assert (version, flags) == ("00", "01")
    assert int(trace_hex, 16) == tracing.task_ids(task_id)[0]
    claimed = next(s for s in traced.get_finished_spans() if s.name == "weave.task.claimed")
    assert int(span_hex, 16) == _ids(claimed)[1]
