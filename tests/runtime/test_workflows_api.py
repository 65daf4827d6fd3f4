"""The workflow routes: start (201/200/409/404/422), one instance, history, the list."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

import httpx
from starlette.testclient import TestClient

from tests.http.conftest import Tenant, client_for, new_tenant
from tests.http.helpers import JSON_HEADERS, assert_problem, body
from tests.runtime.helpers import definition, publish, run_worker, task
from weave_core.access.identity import Permission
from weave_core.engine import Engine
from weave_core.foundation import exactjson

WF = "/v1/namespaces/{ns}/workflows"


def _tenant(engine: Engine) -> Tenant:
    tenant = new_tenant(engine.db)
    publish(engine, tenant.namespace, definition("api", [task("a"), task("b")], input_schema={
        "type": "object", "required": ["amount"],
        "properties": {"amount": {"type": "number"}}}))
    return tenant


def _start(client: TestClient, tenant: Tenant, payload: Mapping[str, object]) -> httpx.Response:
    response: httpx.Response = client.post(
        WF.format(ns=tenant.namespace), content=body(payload),
        headers={**JSON_HEADERS, **tenant.headers(Permission.START)})
    return response


def test_start_is_idempotent_and_pins_the_version(any_engine: Engine) -> None:
    engine = any_engine
    tenant = _tenant(engine)
    client = client_for(engine)
    payload = {"definition_id": "api", "input": {"amount": Decimal("12.50")},
               "idempotency_key": "k1"}
    first = _start(client, tenant, payload)
    assert first.status_code == 201, first.text
    created = exactjson.loads(first.content)
    assert created["status"] == "RUNNING" and created["version"] == "1"
    # a newer version is published: the same key still returns the original instance
    publish(engine, tenant.namespace, {**definition("api", [task("a")]), "version": "2"})
    again = _start(client, tenant, payload)
    assert again.status_code == 200
    assert exactjson.loads(again.content)["workflow_id"] == created["workflow_id"]
    other = _start(client, tenant, {**payload, "input": {"amount": 13}})
    assert_problem(other, 409, "idempotency_conflict")
    fresh = _start(client, tenant, {**payload, "idempotency_key": "k2"})
    assert exactjson.loads(fresh.content)["version"] == "2"  # latest resolved at start
    assert_problem(_start(client, tenant, {**payload, "definition_id": "nope",
                                           "idempotency_key": "k3"}), 404, "not_found")
    bad = _start(client, tenant, {**payload, "version": "1", "input": {"amount": "x"},
                                  "idempotency_key": "k4"})
    problem = assert_problem(bad, 422, "validation_failed")
    assert problem["problems"][0]["path"] == "$.input.amount"


def test_reads_one_instance_history_and_list(any_engine: Engine) -> None:
    engine = any_engine
    tenant = _tenant(engine)
    client = client_for(engine)
    wids = []
    for n in range(3):
        response = _start(client, tenant, {"definition_id": "api", "version": "1",
                                           "input": {"amount": n}, "idempotency_key": f"r{n}"})
        wids.append(exactjson.loads(response.content)["workflow_id"])
    run_worker(engine, tenant.namespace, {"a": {"x": 1}, "b": {"y": 2}}, rounds=2)
    read = tenant.headers(Permission.READ)
    one = client.get(f"{WF.format(ns=tenant.namespace)}/{wids[0]}", headers=read)
    assert one.status_code == 200
    detail = exactjson.loads(one.content)
    assert detail["status"] == "SUCCEEDED"
    assert [s["step_id"] for s in detail["steps"]] == ["a", "b"]
    assert len(detail["activations"]) == 2 and len(detail["tasks"]) == 2
    hist = client.get(f"{WF.format(ns=tenant.namespace)}/{wids[0]}/history?limit=3",
                      headers=read)
    page = exactjson.loads(hist.content)
    assert [i["revision"] for i in page["items"]] == [1, 2, 3]
    assert page["items"][0]["audit"]["action"] == "workflow.started"
    rest = exactjson.loads(client.get(
        f"{WF.format(ns=tenant.namespace)}/{wids[0]}/history?after={page['next_cursor']}",
        headers=read).content)
    assert rest["items"][0]["revision"] == 4 and rest["next_cursor"] is None
    listed = exactjson.loads(client.get(f"{WF.format(ns=tenant.namespace)}?limit=2",
                                        headers=read).content)
    assert len(listed["items"]) == 2 and listed["next_cursor"]
    tail = exactjson.loads(client.get(
        f"{WF.format(ns=tenant.namespace)}?limit=2&cursor={listed['next_cursor']}",
        headers=read).content)
    seen = [i["workflow_id"] for i in listed["items"] + tail["items"]]
    assert sorted(seen) == sorted(wids) and len(set(seen)) == 3
    succeeded = exactjson.loads(client.get(
        f"{WF.format(ns=tenant.namespace)}?status=SUCCEEDED&definition_id=api&paused=false",
        headers=read).content)
    assert {i["workflow_id"] for i in succeeded["items"]} == set(wids)
    assert exactjson.loads(client.get(
        f"{WF.format(ns=tenant.namespace)}?status=RUNNING", headers=read).content
    )["items"] == []
    # another namespace's instance is invisible
    stranger = new_tenant(engine.db)
    hidden = client.get(f"{WF.format(ns=stranger.namespace)}/{wids[0]}",
                        headers=stranger.headers(Permission.READ))
    assert_problem(hidden, 404, "not_found")
    assert_problem(client.get(f"{WF.format(ns=tenant.namespace)}?status=NOPE", headers=read),
                   422, "validation_failed")


def test_every_workflow_route_checks_its_permission_and_namespace(engine: Engine) -> None:
    from weave_http.routes.workflows import API_ROUTES

    tenant = _tenant(engine)
    stranger = new_tenant(engine.db)
    client = client_for(engine)
    started = _start(client, tenant, {"definition_id": "api", "input": {"amount": 1},
                                      "idempotency_key": "perm"})
    wid = exactjson.loads(started.content)["workflow_id"]
    routes = list(API_ROUTES)
    assert len(routes) == 5
    for route in routes:
        for ns_tenant, permission, expected in (
            (tenant, route.permission, {200, 201}),
            (tenant, Permission.ADMIN, {200, 201}),
            (tenant, Permission.WORK, {403}),
            (stranger, route.permission, {404}),
        ):
            assert permission is not None
            path = route.path.format(ns=tenant.namespace, workflow_id=wid)
            content = body({"definition_id": "api", "input": {"amount": 1},
                            "idempotency_key": "perm"}) if route.method == "POST" else None
            response = client.request(
                route.method, path, content=content,
                headers={**JSON_HEADERS, **ns_tenant.headers(permission)})
            assert response.status_code in expected, (route.path, permission, response.text)
