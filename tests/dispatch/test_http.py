"""The worker protocol over HTTP (in-process app on MariaDB): codes, claim_next, long poll."""

from __future__ import annotations

import threading
import time
from decimal import Decimal
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.http.conftest import Tenant, client_for, make_engine, new_tenant
from tests.http.helpers import JSON_HEADERS, body
from weave_core.access.identity import Permission
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database

HANDLERS = [{"name": "echo", "version": "1"}]


@pytest.fixture
def api(mysql_db: Database) -> tuple[TestClient, Tenant]:
    engine = make_engine(mysql_db, PluginHost.from_plugins([]))
    return client_for(engine), new_tenant(mysql_db)


def post(client: TestClient, tenant: Tenant, path: str, doc: Any,
         permission: Permission = Permission.WORK) -> Any:
    headers = {**JSON_HEADERS, "Authorization": f"Bearer {tenant.token(permission)}"}
    return client.post(f"/v1/namespaces/{tenant.namespace}{path}", content=body(doc),
                       headers=headers)


def test_worker_protocol_round_trip(api: tuple[TestClient, Tenant]) -> None:
    client, tenant = api
    made = [post(client, tenant, "/tasks", {"queue": "q", "handler": "echo",
                                            "input": {"i": i, "x": Decimal("1.10")}})
            for i in range(2)]
    assert [r.status_code for r in made] == [201, 201]
    assert made[0].json()["status"] == "PENDING"
    got = post(client, tenant, "/queues/q/claim",
               {"worker_id": "w", "handlers": HANDLERS, "max_tasks": 1})
    assert got.status_code == 200, got.text
    [task] = got.json()["tasks"]
    assert task["input"] == {"i": 0, "x": 1.1} and task["attempt_no"] == 1
    assert task["lease_expires_at"].endswith("Z")
    beat = post(client, tenant, f"/tasks/{task['task_id']}/heartbeat",
                {"attempt_id": task["attempt_id"]})
    assert beat.status_code == 200 and beat.json()["cancel_requested"] is False
    done = post(client, tenant, f"/tasks/{task['task_id']}/complete", {
        "attempt_id": task["attempt_id"], "outcome": "succeeded", "output": {"ok": True},
        "claim_next": {"worker_id": "w", "handlers": HANDLERS, "max_tasks": 4}})
    assert done.status_code == 200, done.text
    result = done.json()
    assert result["task"]["status"] == "SUCCEEDED" and result["replay"] is False
    [following] = result["next_tasks"]  # the second task, in the same response
    assert following["input"]["i"] == 1
    again = post(client, tenant, f"/tasks/{task['task_id']}/complete", {
        "attempt_id": task["attempt_id"], "outcome": "succeeded", "output": {"ok": True}})
    assert again.status_code == 200 and again.json()["replay"] is True
    conflict = post(client, tenant, f"/tasks/{task['task_id']}/complete", {
        "attempt_id": task["attempt_id"], "outcome": "succeeded", "output": {"ok": False}})
    assert conflict.status_code == 409 and conflict.json()["code"] == "report_conflict"
    stale = post(client, tenant, f"/tasks/{task['task_id']}/heartbeat",
                 {"attempt_id": task["attempt_id"]})
    assert stale.status_code == 409 and stale.json()["code"] == "attempt_superseded"
    missing = post(client, tenant, "/tasks/tsk_nope/heartbeat", {"attempt_id": "a"})
    assert missing.status_code == 404
    read = client.get(f"/v1/namespaces/{tenant.namespace}/tasks/{task['task_id']}",
                      headers={"Authorization": f"Bearer {tenant.token(Permission.READ)}"})
    assert read.status_code == 200 and read.json()["result"] == {"ok": True}


def test_bad_requests_and_permissions(api: tuple[TestClient, Tenant]) -> None:
    client, tenant = api
    bad = post(client, tenant, "/queues/q/claim",
               {"worker_id": "w", "handlers": [], "max_tasks": 99})
    assert bad.status_code == 422
    assert {p["path"] for p in bad.json()["problems"]} == {"$.handlers", "$.max_tasks"}
    denied = post(client, tenant, "/queues/q/claim", {"worker_id": "w", "handlers": HANDLERS},
                  permission=Permission.READ)
    assert denied.status_code == 403
    cap = client.put(f"/v1/namespaces/{tenant.namespace}/queues/q", content=body({"capacity": 1}),
                     headers={**JSON_HEADERS,
                              "Authorization": f"Bearer {tenant.token(Permission.ADMIN)}"})
    assert cap.status_code == 200 and cap.json() == {"name": "q", "capacity": 1, "outstanding": 0}
    assert post(client, tenant, "/tasks", {"queue": "q", "handler": "echo"}).status_code == 201
    full = post(client, tenant, "/tasks", {"queue": "q", "handler": "echo"})
    assert full.status_code == 429 and full.json()["code"] == "queue_full"
    other = new_tenant(tenant.db)
    hidden = client.post(f"/v1/namespaces/{tenant.namespace}/queues/q/claim",
                         content=body({"worker_id": "w", "handlers": HANDLERS}),
                         headers={**JSON_HEADERS,
                                  "Authorization": f"Bearer {other.token(Permission.WORK)}"})
    assert hidden.status_code == 404


def test_long_poll_is_woken_in_process(api: tuple[TestClient, Tenant]) -> None:
    client, tenant = api
    result: dict[str, Any] = {}

    def poll() -> None:
        start = time.monotonic()
        result["response"] = post(client, tenant, "/queues/lp/claim",
                                  {"worker_id": "w", "handlers": HANDLERS, "wait_seconds": 10})
        result["elapsed"] = time.monotonic() - start

    thread = threading.Thread(target=poll)
    thread.start()
    time.sleep(0.5)
    created = time.monotonic()
    assert post(client, tenant, "/tasks", {"queue": "lp", "handler": "echo"}).status_code == 201
    thread.join(timeout=15)
    assert result["response"].status_code == 200
    assert len(result["response"].json()["tasks"]) == 1
    assert time.monotonic() - created < 0.5  # woken, not polled
    empty = post(client, tenant, "/queues/lp/claim",
                 {"worker_id": "w", "handlers": HANDLERS, "wait_seconds": Decimal("0.3")})
    assert empty.status_code == 200 and empty.json() == {"tasks": []}


@pytest.mark.parametrize("seconds", [366 * 24 * 3600 + 1, 1322643833723, 10**30])
def test_a_deadline_beyond_the_limit_is_refused_not_overflowed(
        api: tuple[TestClient, Tenant], seconds: int) -> None:
    # Found by the schemathesis sweep (tests/http/test_schemathesis.py): the date arithmetic
    # overflowed into a 500 before the kernel's own checks ran.
    client, tenant = api
    refused = post(client, tenant, "/tasks",
                   {"queue": "q", "handler": "echo", "deadline_seconds": seconds})
    assert refused.status_code == 422, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert [(p["path"], p["code"]) for p in refused.json()["problems"]] == [
        ("$.deadline_seconds", "out_of_range")]
    longest = post(client, tenant, "/tasks",
                   {"queue": "q", "handler": "echo", "deadline_seconds": 366 * 24 * 3600})
    assert longest.status_code == 201, longest.text


def test_a_bad_claim_next_is_refused_before_the_report_is_taken(
    api: tuple[TestClient, Tenant],
) -> None:
    client, tenant = api
    assert post(client, tenant, "/tasks", {"queue": "q", "handler": "echo"}).status_code == 201
    [task] = post(client, tenant, "/queues/q/claim",
                  {"worker_id": "w", "handlers": HANDLERS}).json()["tasks"]
    refused = post(client, tenant, f"/tasks/{task['task_id']}/complete", {
        "attempt_id": task["attempt_id"], "outcome": "succeeded", "output": {},
        "claim_next": {"worker_id": "w", "handlers": [], "max_tasks": 99}})
    assert refused.status_code == 422 and refused.json()["code"] == "validation_failed"
    read = client.get(f"/v1/namespaces/{tenant.namespace}/tasks/{task['task_id']}",
                      headers={"Authorization": f"Bearer {tenant.token(Permission.READ)}"})
    assert read.json()["status"] == "RUNNING"  # nothing was recorded
    taken = post(client, tenant, f"/tasks/{task['task_id']}/complete", {
        "attempt_id": task["attempt_id"], "outcome": "succeeded", "output": {}})
    assert taken.status_code == 200 and taken.json()["task"]["status"] == "SUCCEEDED"
