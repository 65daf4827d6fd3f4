"""The signals route over HTTP (in-process app, no tick): statuses, problems, the view."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from decimal import Decimal

import pytest
from starlette.testclient import TestClient

from tests.http.conftest import Tenant, client_for, new_tenant
from tests.runtime.conftest import make_engine
from tests.runtime.helpers import definition, publish, task
from tests.waits.helpers import poll_step, signal_step
from weave_core.access.identity import Permission
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database


@pytest.fixture
def world(mysql_db: Database, plugin_host: PluginHost) -> Iterator[tuple[TestClient, Tenant, str]]:
    engine: Engine = make_engine(mysql_db, plugin_host,
                                 limits=Limits(max_unmatched_signals=3, max_value_bytes=1024))
    tenant = new_tenant(mysql_db)
    publish(engine, tenant.namespace, definition("h", [task("a"), signal_step("approval"),
                                                       task("after")]))
    client = client_for(engine)
    started = client.post(f"/v1/namespaces/{tenant.namespace}/workflows",
                          headers=tenant.headers(Permission.START),
                          json={"definition_id": "h", "input": {"job": "job-1"},
                                "idempotency_key": secrets.token_hex(6)})
    assert started.status_code == 201
    yield client, tenant, started.json()["workflow_id"]


def _url(tenant: Tenant, wid: str) -> str:
    return f"/v1/namespaces/{tenant.namespace}/workflows/{wid}/signals"


def test_accept_replay_conflict_and_not_found(world: tuple[TestClient, Tenant, str]) -> None:
    client, tenant, wid = world
    headers = tenant.headers(Permission.SIGNAL)
    body = {"signal_id": "s-1", "name": "approval", "correlation_key": "job-1",
            "payload": {"ok": True, "amount": 12.50}, "evidence": ["ticket-9"]}
    first = client.post(_url(tenant, wid), headers=headers, json=body)
    assert first.status_code == 202, first.text
    got = first.json()
    assert got["state"] == "ACCEPTED" and got["param_version"] == "1"
    assert got["accepted_by"].startswith("token:") and got["accepted_at"].endswith("Z")
    assert exactjson.loads(first.text)["payload"]["amount"] == Decimal("12.50")  # exact
    again = client.post(_url(tenant, wid), headers=headers, json=body)
    assert again.status_code == 200 and again.json()["accepted_at"] == got["accepted_at"]
    other = client.post(_url(tenant, wid), headers=headers, json={**body, "payload": {}})
    assert other.status_code == 409 and other.json()["code"] == "signal_conflict"
    missing = client.post(_url(tenant, "wf_nope"), headers=headers,
                          json={**body, "signal_id": "s-2"})
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    listed = client.get(_url(tenant, wid), headers=tenant.headers(Permission.READ))
    assert [s["signal_id"] for s in listed.json()["items"]] == ["s-1"]
    detail = client.get(f"/v1/namespaces/{tenant.namespace}/workflows/{wid}",
                        headers=tenant.headers(Permission.READ)).json()
    assert [s["state"] for s in detail["signals"]] == ["ACCEPTED"]
    assert detail["waits"] == []  # the wait opens after task "a"


def test_permissions_validation_and_limits(world: tuple[TestClient, Tenant, str]) -> None:
    client, tenant, wid = world
    body = {"signal_id": "p-1", "name": "approval", "correlation_key": "job-1"}
    assert client.post(_url(tenant, wid), headers=tenant.headers(Permission.READ),
                       json=body).status_code == 403
    headers = tenant.headers(Permission.SIGNAL)
    bad = client.post(_url(tenant, wid), headers=headers, json={**body, "correlation_key": ""})
    assert bad.status_code == 422
    big = client.post(_url(tenant, wid), headers=headers, json={**body, "payload": "x" * 2000})
    assert big.status_code == 413 and big.json()["code"] == "signal_payload_too_large"
    for n in range(3):
        assert client.post(_url(tenant, wid), headers=headers,
                           json={**body, "signal_id": f"b-{n}"}).status_code == 202
    full = client.post(_url(tenant, wid), headers=headers, json={**body, "signal_id": "b-9"})
    assert full.status_code == 429 and full.json()["code"] == "signal_backlog_full"


def test_a_signal_to_an_open_wait_is_consumed_at_once(mysql_db: Database,
                                                      plugin_host: PluginHost) -> None:
    engine = make_engine(mysql_db, plugin_host)
    tenant = new_tenant(mysql_db)
    publish(engine, tenant.namespace, definition("o", [signal_step("approval"), task("after")]))
    client = client_for(engine)
    wid = client.post(f"/v1/namespaces/{tenant.namespace}/workflows",
                      headers=tenant.headers(Permission.START),
                      json={"definition_id": "o", "input": {"job": "job-1"},
                            "idempotency_key": "k"}).json()["workflow_id"]
    sent = client.post(_url(tenant, wid), headers=tenant.headers(Permission.SIGNAL),
                       json={"signal_id": "go", "name": "approval", "correlation_key": "job-1"})
    assert sent.status_code == 202 and sent.json()["state"] == "ACCEPTED"
    detail = client.get(f"/v1/namespaces/{tenant.namespace}/workflows/{wid}",
                        headers=tenant.headers(Permission.READ)).json()
    (sig,) = detail["signals"]
    (wait,) = detail["waits"]
    assert sig["state"] == "CONSUMED" and sig["consumed_by_activation_id"] == wait["activation_id"]
    assert wait["state"] == "SATISFIED" and wait["winner"] == "signal"
    claimed = client.post(f"/v1/namespaces/{tenant.namespace}/queues/q/claim",
                          headers=tenant.headers(Permission.WORK),
                          json={"worker_id": "w", "handlers": [{"name": "after", "version": "1"}]})
    assert len(claimed.json()["tasks"]) == 1


def test_limits_too_large_together_are_refused_at_publish_and_at_start(
        mysql_db: Database, plugin_host: PluginHost) -> None:
    engine = make_engine(mysql_db, plugin_host, limits=Limits(max_poll_attempts_total=10))
    tenant = new_tenant(mysql_db)
    client = client_for(engine)
    base = f"/v1/namespaces/{tenant.namespace}"
    too_many = definition("budget", [poll_step(rounds=5, attempts=3)])  # 15 attempts > 10
    published = client.post(f"{base}/definitions", headers=tenant.headers(Permission.PUBLISH),
                            json=too_many)
    assert published.status_code == 422, published.text
    assert published.headers["content-type"].startswith("application/problem+json")
    assert ("$.steps[0]", "poll_budget_too_large") in {
        (p["path"], p["code"]) for p in published.json()["problems"]}
    # Each limit alone is fine, but the poll outlives the instance's own deadline.
    publish(engine, tenant.namespace,
            definition("long", [poll_step(deadline=7200)], deadline_seconds=3600))
    started = client.post(f"{base}/workflows", headers=tenant.headers(Permission.START),
                          json={"definition_id": "long", "input": {"job": "j"},
                                "idempotency_key": secrets.token_hex(6)})
    assert started.status_code == 422, started.text
    assert [p["code"] for p in started.json()["problems"]] == ["wait_exceeds_deadline"]
    listed = client.get(f"{base}/workflows", headers=tenant.headers(Permission.READ))
    assert listed.status_code == 200 and listed.json()["items"] == []  # nothing was started
