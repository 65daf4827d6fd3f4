"""Operating a real ``weave serve`` on MariaDB (issue #13 items 1, 3, 6): ``/metrics``
after a workflow ran, JSON log lines with the ids, a slow client, a graceful stop."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.live_server import LiveServer, ServerProcess, start_server, weave_command
from weave_core.access.identity import Permission, create_namespace, create_token
from weave_core.storage.db import Database
from weave_sdk import (
    Client,
    FailurePolicy,
    NonRetryableError,
    RetryableError,
    RetryPolicy,
    Workflow,
    handler,
)
from weave_sdk.worker import Worker

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(base_url: str, **headers: str) -> Samples:
    """Every sample of ``/metrics``, parsed by prometheus_client's own parser."""
    answer = httpx.get(f"{base_url}/metrics", headers=headers, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(answer.text)
            for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


_flaky_calls: dict[str, int] = {}


@handler("obs_flaky")
def obs_flaky(data: dict[str, str]) -> dict[str, str]:
    """Fails its first attempt (a retry), then succeeds."""
    _flaky_calls[data["key"]] = _flaky_calls.get(data["key"], 0) + 1
    if _flaky_calls[data["key"]] == 1:
        raise RetryableError("first attempt fails", type="flaky")
    return {"key": data["key"]}


@handler("obs_done")
def obs_done(data: object) -> dict[str, bool]:
    return {"done": True}


@handler("obs_refuse")
def obs_refuse(data: object) -> None:
    raise NonRetryableError("refused on purpose", type="refused")


def _two_steps(definition_id: str) -> Workflow:
    wf = Workflow(definition_id, version="1", queue="obs", input_schema={"type": "object"})
    wf.task("flaky", handler=obs_flaky, input={"key": "k"},
            retry=RetryPolicy(max_attempts=3, backoff=Decimal("0.05")))
    wf.task("done", handler=obs_done, input={})
    return wf


def _refused(definition_id: str) -> Workflow:
    wf = Workflow(definition_id, version="1", queue="obs", failure_policy=FailurePolicy.REVIEW,
                  input_schema={"type": "object"})
    wf.task("refuse", handler=obs_refuse, input={}, retry=RetryPolicy(max_attempts=1))
    return wf


def _run(base: str, token: str, ns: str, workflow: Workflow) -> str:
    """Publish and run ``workflow`` to its end (or review); its workflow id."""
    _flaky_calls.clear()
    with Client(base, token, ns) as client:
        client.publish(workflow)
        worker = Worker(client, queue="obs", handlers=[obs_flaky, obs_done, obs_refuse],
                        wait_seconds=1)
        with worker.running():
            handle = client.start(workflow.definition_id, {})
            try:
                handle.result(timeout=30)
            except Exception:  # the refused one ends in review: that is the point
                pass
        return handle.workflow_id


# --- metrics ---------------------------------------------------------------------------


def test_a_scrape_after_a_workflow_shows_the_counters_it_moved(
    weave_server: LiveServer,
) -> None:
    base, token, ns = weave_server
    before = scrape(base)
    _run(base, token, ns, _two_steps("obs-metrics"))
    after = scrape(base)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("weave_instances_started_total", namespace=ns) == 1
    assert moved("weave_instances_finished_total", namespace=ns, status="SUCCEEDED") == 1
    assert moved("weave_tasks_total", event="created") >= 2
    assert moved("weave_tasks_total", event="succeeded") >= 2
    assert moved("weave_tasks_total", event="retry_scheduled") >= 1
    assert moved("weave_tasks_total", event="started") >= 3
    assert moved("weave_steps_total", event="activated") >= 2
    assert moved("weave_steps_total", event="succeeded") >= 2
    assert moved("weave_engine_gap_seconds_count") >= 1
    assert moved("weave_queue_wait_seconds_count", queue="obs") >= 1
    claim = "/v1/namespaces/{ns}/queues/{queue}/claim"
    assert moved("weave_http_requests_total", method="POST", route=claim, status="200") >= 1
    assert moved("weave_http_request_duration_seconds_count", method="POST", route=claim) >= 1
    complete = "/v1/namespaces/{ns}/tasks/{task_id}/complete"
    assert moved("weave_http_requests_total", method="POST", route=complete, status="200") >= 3
    assert moved("weave_transaction_duration_seconds_count", transaction="step") >= 1
    assert value(after, "weave_tick_duration_seconds_count") > 0
    # The database gauges: present, and no instance of this namespace is still live.
    assert ("weave_inbox_lag_seconds", ()) in after
    assert ("weave_pending_advance_lag_seconds", ()) in after
    assert value(after, "weave_instances", namespace=ns, status="RUNNING") == 0
    assert ("weave_long_poll_waiters", (("kind", "claim"),)) in after


def test_the_database_gauges_count_live_instances(weave_server: LiveServer) -> None:
    base, token, ns = weave_server
    _run(base, token, ns, _refused("obs-review"))
    time.sleep(5.1)  # past the gauges' cache
    after = scrape(base)
    assert value(after, "weave_instances", namespace=ns, status="NEEDS_REVIEW") == 1
    assert value(after, "weave_reviews_opened_total", reason="task_failed") >= 1


def test_the_metrics_token_guards_metrics_only(live_database: tuple[str, Database]) -> None:
    server = start_server(live_database[0], "--no-tick", "--metrics-token", "s3cret")
    try:
        refused = httpx.get(f"{server.base_url}/metrics", timeout=10)
        assert refused.status_code == 401
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["code"] == "unauthenticated"
        samples = scrape(server.base_url, authorization="Bearer s3cret")
        assert value(samples, "weave_http_requests_total", method="GET", route="/metrics",
                     status="401") == 1
    finally:
        server.stop()


def test_a_separate_metrics_port(live_database: tuple[str, Database]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = start_server(live_database[0], "--no-tick", "--metrics-port", str(port))
    try:
        assert httpx.get(f"{server.base_url}/metrics", timeout=10).status_code == 404
        samples = scrape(f"http://127.0.0.1:{port}")
        assert ("weave_inbox_lag_seconds", ()) in samples
    finally:
        server.stop()


# --- logs ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def json_server(live_database: tuple[str, Database]) -> Iterator[ServerProcess]:
    """A second server on the live database: JSON logs at info, 1 s read time-outs."""
    server = start_server(live_database[0], "--log-format", "json", "--log-level", "info",
                          "--header-timeout", "1", "--body-timeout", "1")
    yield server
    server.stop()


def _fresh(server: ServerProcess, db: Database) -> tuple[str, str, str]:
    ns = f"obs-{time.monotonic_ns() % 10**9}"
    create_namespace(db, ns)
    return server.base_url, create_token(db, ns, [Permission.ADMIN]), ns


def _lines(server: ServerProcess) -> list[dict[str, Any]]:
    found = []
    for line in list(server.output):
        if line.startswith("{"):
            found.append(json.loads(line))
    return found


def _wait_for(server: ServerProcess, match: Any, timeout: float = 10) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        hits = [line for line in _lines(server) if match(line)]
        if hits or time.monotonic() > deadline:
            return hits
        time.sleep(0.05)


def test_json_log_lines_carry_the_ids(json_server: ServerProcess,
                                      live_database: tuple[str, Database]) -> None:
    base, token, ns = _fresh(json_server, live_database[1])
    startup = _wait_for(json_server, lambda line: "starting" in line["message"])
    assert startup, json_server.output
    first = startup[0]
    assert first["level"] == "info" and first["dialect"] == "mysql"
    assert first["node_id"] and first["version"] and first["tick_period_s"] == 1.0
    assert "weave-engine:task (weave_nodes.task)" in first["plugins"]
    assert "@" not in json.dumps(first)  # never the password or the user of the URL

    wid = _run(base, token, ns, _two_steps("obs-logs"))
    started = _wait_for(json_server, lambda line: line["message"] == "workflow started"
                        and line.get("workflow_id") == wid)
    assert started and started[0]["namespace"] == ns and started[0]["level"] == "info"
    done = _wait_for(json_server, lambda line: line["message"] == "workflow succeeded"
                     and line.get("workflow_id") == wid)
    assert done and done[0]["namespace"] == ns
    retry = _wait_for(json_server, lambda line: line["message"] == "task retry scheduled"
                      and line.get("namespace") == ns)
    assert retry and retry[0]["task"] and retry[0]["attempt"]

    review_wid = _run(base, token, ns, _refused("obs-logs-review"))
    review = _wait_for(json_server, lambda line: line["message"].startswith("review opened")
                       and line.get("workflow_id") == review_wid)
    assert review and review[0]["level"] == "warning" and review[0]["namespace"] == ns
    failed = _wait_for(json_server, lambda line: line["message"].startswith("step.failed")
                       and line.get("workflow_id") == review_wid)
    assert failed and failed[0]["step"] == "refuse" and failed[0]["activation"]


# --- a server that holds up ------------------------------------------------------------


def test_a_slow_client_does_not_stop_the_server_answering_others(
    json_server: ServerProcess, live_database: tuple[str, Database],
) -> None:
    _, token, ns = _fresh(json_server, live_database[1])
    host, port = json_server.base_url.removeprefix("http://").split(":")
    slow = socket.create_connection((host, int(port)))
    slow_body = socket.create_connection((host, int(port)))
    try:
        slow.sendall(b"POST /v1/namespaces/x/queues/q/claim HTTP/1.1\r\nHost: x\r\n")
        # Authenticated, so the handler really waits for the body that never comes.
        slow_body.sendall(f"POST /v1/namespaces/{ns}/queues/q/claim HTTP/1.1\r\nHost: x\r\n"
                          f"Authorization: Bearer {token}\r\n"
                          "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
                          .encode())
        started = time.monotonic()
        for _ in range(5):  # others are answered at once meanwhile
            answer = httpx.get(f"{json_server.base_url}/v1/health", timeout=2)
            assert answer.status_code == 200
        assert time.monotonic() - started < 2
        # Both half-sent requests lose their connection after the 1 s time-outs.
        for conn in (slow, slow_body):
            conn.settimeout(5)
            leftover = b""
            while chunk := conn.recv(4096):
                leftover += chunk
            assert time.monotonic() - started < 3
            assert b"200 OK" not in leftover
    finally:
        slow.close()
        slow_body.close()
    assert httpx.get(f"{json_server.base_url}/v1/health", timeout=2).status_code == 200


def test_graceful_shutdown_ends_long_polls_at_once(live_database: tuple[str, Database]) -> None:
    db = live_database[1]
    ns = f"obs-stop-{time.monotonic_ns() % 10**9}"
    create_namespace(db, ns)
    token = create_token(db, ns, [Permission.ADMIN])
    server = start_server(live_database[0], "--graceful-timeout", "5")
    base = server.base_url
    headers = {"authorization": f"Bearer {token}"}
    results: list[httpx.Response | BaseException] = []

    def claim() -> None:
        try:
            results.append(httpx.post(
                f"{base}/v1/namespaces/{ns}/queues/idle/claim", headers=headers, timeout=30,
                json={"worker_id": "w", "handlers": [{"name": "h", "version": "1"}],
                      "max_tasks": 1, "wait_seconds": 25}))
        except BaseException as exc:
            results.append(exc)

    threads = [threading.Thread(target=claim) for _ in range(3)]
    for thread in threads:
        thread.start()
    waiting_deadline = time.monotonic() + 10
    while value(scrape(base), "weave_long_poll_waiters", kind="claim") < 3:
        assert time.monotonic() < waiting_deadline, "the claims never started waiting"
        time.sleep(0.05)
    stopped_at = time.monotonic()
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        pytest.fail("weave serve did not stop within 15 s of SIGTERM")
    took = time.monotonic() - stopped_at
    for thread in threads:
        thread.join(timeout=5)
    server.stop()
    assert took < 3.0, f"graceful shutdown took {took:.2f} s with three long polls waiting"
    assert server.process.returncode == 0
    assert len(results) == 3
    for answer in results:
        assert isinstance(answer, httpx.Response), answer
        assert answer.status_code == 200 and answer.json() == {"tasks": []}


def test_several_engine_processes_serve_one_sum(live_database: tuple[str, Database]) -> None:
    """``--workers 2``: prometheus_client's multiprocess mode; any process answers with the
    requests of both."""
    server = start_server(live_database[0], "--no-tick", "--workers", "2")
    try:
        before = value(scrape(server.base_url), "weave_http_requests_total", method="GET",
                       route="/v1/health", status="200")
        for _ in range(20):  # new connections: the kernel spreads them over both processes
            with httpx.Client() as fresh:
                assert fresh.get(f"{server.base_url}/v1/health", timeout=5).status_code == 200
        samples = scrape(server.base_url)
        assert value(samples, "weave_http_requests_total", method="GET", route="/v1/health",
                     status="200") == before + 20
        assert ("weave_inbox_lag_seconds", ()) in samples
    finally:
        server.stop()


# --- traces from the OTEL_* variables --------------------------------------------------


def test_otel_variables_choose_the_exporter(live_database: tuple[str, Database]) -> None:
    server = start_server(live_database[0], "--no-tick", env={
        "OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "weave-under-test"})
    try:
        assert httpx.get(f"{server.base_url}/v1/health", timeout=5).status_code == 200
    finally:
        server.stop()  # spans are flushed when the process ends
    text = "".join(server.output)
    assert '"name": "GET /v1/health"' in text and '"service.name": "weave-under-test"' in text
    assert '"name": "transaction health"' in text  # the request's own transaction

    bad = subprocess.run(
        weave_command("serve", "--port", "0", "--database-url", live_database[0]),
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "OTEL_TRACES_EXPORTER": "zipkin"})
    assert bad.returncode == 2
    assert bad.stderr.startswith("error[invalid_option]: OTEL_TRACES_EXPORTER='zipkin'")
