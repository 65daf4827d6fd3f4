"""Everything recorded is readable (#12 item 5, R-10.2): a task's attempts and events after a
lease expiry, a refused report and a retry; the attempts inside the instance view; the
history's task events; the same through the SDK and ``weave show --attempts --history``.

In-process app on MariaDB, driven over HTTP as a worker would; database time is moved with
the test clock so the lease runs out without waiting.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.http.conftest import Tenant, client_for
from tests.http.helpers import JSON_HEADERS, assert_problem, body
from tests.runtime.helpers import definition, publish
from weave_core.dispatch.leases import sweep_expired_leases
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.storage.db import set_clock_offset
from weave_http.cli import build_parser
from weave_http.cli.workflows import _show, run_command
from weave_sdk import AttemptInfo, Client, HistoryTaskEvent, TaskEventInfo

CLAIM = {"worker_id": "w-records", "handlers": [{"name": "charge", "version": "1"}],
         "max_tasks": 1, "wait_seconds": 0}


@pytest.fixture
def clock(mysql_engine: Engine) -> Iterator[list[float]]:
    """Set ``clock[0]`` seconds ahead with :func:`_at`; always set back afterwards."""
    try:
        yield [0.0]
    finally:
        set_clock_offset(mysql_engine.db, 0)


def _at(engine: Engine, seconds: float) -> None:
    set_clock_offset(engine.db, seconds)


def _post(client: TestClient, url: str, tenant: Tenant, permission: str,
          payload: Any) -> Any:
    response = client.post(url, content=body(payload),
                           headers={**JSON_HEADERS, **tenant.headers(permission)})
    return response


def _claim(client: TestClient, tenant: Tenant) -> dict[str, Any]:
    response = _post(client, f"/v1/namespaces/{tenant.namespace}/queues/pay/claim", tenant,
                     "work", CLAIM)
    assert response.status_code == 200, response.text
    tasks = exactjson.loads(response.content)["tasks"]
    assert len(tasks) == 1, tasks
    return dict(tasks[0])


def _complete(client: TestClient, tenant: Tenant, claimed: dict[str, Any],
              payload: dict[str, Any]) -> Any:
    url = f"/v1/namespaces/{tenant.namespace}/tasks/{claimed['task_id']}/complete"
    return _post(client, url, tenant, "work", {"attempt_id": claimed["attempt_id"], **payload})


def _run_the_story(engine: Engine, tenant: Tenant) -> tuple[TestClient, str, str]:
    """Attempt 1 loses its lease (retry), its late report is refused, attempt 2 fails
    retryably (retry), attempt 3 succeeds. Returns the client, workflow id and task id."""
    publish(engine, tenant.namespace, definition("records", [{
        "id": "charge", "kind": "task", "queue": "pay",
        "handler": {"name": "charge", "version": "1"}, "input": {},
        "retry": {"max_attempts": 4, "backoff_seconds": 1, "max_backoff_seconds": 2},
        "timeouts": {"heartbeat": 5}}]))
    client = client_for(engine)
    started = _post(client, f"/v1/namespaces/{tenant.namespace}/workflows", tenant, "start",
                    {"definition_id": "records", "input": {}, "idempotency_key": "r-1"})
    assert started.status_code == 201, started.text
    workflow_id = exactjson.loads(started.content)["workflow_id"]

    first = _claim(client, tenant)
    _at(engine, 30)  # past the 5 s lease
    assert first["task_id"] in sweep_expired_leases(engine).handled
    _at(engine, 60)  # past the backoff
    second = _claim(client, tenant)
    assert second["task_id"] == first["task_id"] and second["attempt_no"] == 2
    late = _complete(client, tenant, first, {"outcome": "succeeded", "output": {"late": 1}})
    assert_problem(late, 409, "attempt_superseded")
    failed = _complete(client, tenant, second, {"outcome": "failed", "error": {
        "type": "gateway_busy", "message": "try later", "retryable": True}})
    assert failed.status_code == 200, failed.text
    _at(engine, 90)
    third = _claim(client, tenant)
    done = _complete(client, tenant, third, {"outcome": "succeeded", "output": {"ok": True}})
    assert done.status_code == 200, done.text
    return client, workflow_id, str(first["task_id"])


def test_attempts_events_and_history_after_a_lease_expiry_and_retries(
    mysql_engine: Engine, mysql_tenant: Tenant, clock: list[float],
) -> None:
    engine, tenant = mysql_engine, mysql_tenant
    client, workflow_id, task_id = _run_the_story(engine, tenant)
    read = tenant.headers("read")
    ns = f"/v1/namespaces/{tenant.namespace}"

    attempts = exactjson.loads(client.get(f"{ns}/tasks/{task_id}/attempts", headers=read)
                               .content)["items"]
    assert [(a["attempt_no"], a["outcome"]) for a in attempts] == [
        (1, "lease_expired"), (2, "failed"), (3, "succeeded")]
    assert {a["worker_id"] for a in attempts} == {"w-records"}
    assert attempts[0]["reported_at"] is None and attempts[0]["ended_at"] is not None
    assert attempts[0]["error"]["type"] == "lease_expired"
    assert attempts[1]["error"]["type"] == "gateway_busy"
    assert attempts[2]["reported_at"] is not None and attempts[2]["error"] is None
    for a in attempts:
        assert a["claimed_at"] == a["started_at"] and a["lease_expires_at"] > a["started_at"]

    events = exactjson.loads(client.get(f"{ns}/tasks/{task_id}/events", headers=read)
                             .content)["items"]
    kinds = [e["event_type"] for e in events]
    assert kinds.count("task.retry_scheduled") == 2 and kinds.count("task.started") == 3
    assert kinds[0] == "task.created" and kinds[-1] == "task.succeeded"
    refused = [e for e in events if e["event_type"] == "task.report_refused"]
    assert len(refused) == 1 and refused[0]["attempt_id"] == attempts[0]["attempt_id"]
    assert refused[0]["payload"]["reason"] == "attempt_superseded"

    detail = exactjson.loads(client.get(f"{ns}/workflows/{workflow_id}", headers=read).content)
    assert detail["status"] == "SUCCEEDED"
    (task,) = detail["tasks"]
    assert task["attempts"] == attempts

    history = exactjson.loads(client.get(f"{ns}/workflows/{workflow_id}/history",
                                         headers=read).content)
    assert [(e["kind"], e["step_id"]) for e in history["task_events"]] == [
        ("lease_expired", "charge"), ("report_refused", "charge"),
        ("retry_scheduled", "charge")]

    # every task event shows on exactly one page, in the page of its own time
    pages: list[str] = []
    after = 0
    while True:
        page = exactjson.loads(client.get(
            f"{ns}/workflows/{workflow_id}/history?limit=1&after={after}",
            headers=read).content)
        pages += [e["kind"] for e in page["task_events"]]
        if page["next_cursor"] is None:
            break
        after = page["next_cursor"]
    assert pages == ["lease_expired", "report_refused", "retry_scheduled"]

    assert_problem(client.get(f"{ns}/tasks/no-such-task/attempts", headers=read), 404,
                   "task_not_found")
    assert_problem(client.get(f"/v1/namespaces/other/tasks/{task_id}/events", headers=read),
                   404, "not_found")


def test_the_sdk_and_weave_show_read_the_same_records(
    mysql_engine: Engine, mysql_tenant: Tenant, clock: list[float],
) -> None:
    engine, tenant = mysql_engine, mysql_tenant
    client, workflow_id, task_id = _run_the_story(engine, tenant)
    with Client("http://testserver", tenant.token("read"), tenant.namespace,
                transport=client._transport) as sdk:
        attempts = sdk.task_attempts(task_id)
        assert all(isinstance(a, AttemptInfo) for a in attempts)
        assert [a.outcome for a in attempts] == ["lease_expired", "failed", "succeeded"]
        events = sdk.task_events(task_id)
        assert all(isinstance(e, TaskEventInfo) for e in events)
        assert "task.report_refused" in [e.event_type for e in events]
        description = sdk.get_workflow(workflow_id)
        assert [a.attempt_id for a in description.tasks[0].attempts] == [
            a.attempt_id for a in attempts]
        noted = sdk.history_task_events(workflow_id)
        assert all(isinstance(e, HistoryTaskEvent) for e in noted)
        assert [e.kind for e in noted] == ["lease_expired", "report_refused",
                                          "retry_scheduled"]

        args = build_parser().parse_args(["show", workflow_id, "--attempts", "--history"])
        out, err = io.StringIO(), io.StringIO()
        assert run_command(_show, args, client=sdk, out=out, err=err) == 0, err.getvalue()
    text = out.getvalue()
    attempts_section = text.split("\nattempts\n", 1)[1].split("\n\n", 1)[0]
    rows = attempts_section.splitlines()[1:]
    assert len(rows) == 3
    assert "lease_expired" in rows[0] and "failed" in rows[1] and "succeeded" in rows[2]
    assert "try later" in rows[1]
    task_section = text.split("\ntask events\n", 1)[1]
    assert [line.split()[2] for line in task_section.strip().splitlines()[1:]] == [
        "lease_expired", "report_refused", "retry_scheduled"]
