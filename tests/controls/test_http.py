"""The control and review routes over HTTP (Starlette test client, MariaDB)."""

from __future__ import annotations

from typing import Any

from tests.http.conftest import client_for, new_tenant
from tests.http.helpers import JSON_HEADERS, body
from tests.runtime.helpers import definition, publish, report, task, work
from weave_core.access.identity import Permission
from weave_core.engine import Engine


def _post(client: Any, path: str, headers: dict[str, str], payload: Any) -> Any:
    return client.post(path, content=body(payload), headers={**JSON_HEADERS, **headers})


def test_control_and_review_routes(engine: Engine) -> None:
    client = client_for(engine)
    tenant = new_tenant(engine.db)
    ns = tenant.namespace
    publish(engine, ns, definition("api", [task("a"), task("b")]))
    admin = tenant.headers(Permission.START, Permission.READ)
    started = _post(client, f"/v1/namespaces/{ns}/workflows", admin,
                    {"definition_id": "api", "input": {}, "idempotency_key": "k1"})
    assert started.status_code == 201, started.text
    wid = started.json()["workflow_id"]
    base = f"/v1/namespaces/{ns}/workflows/{wid}"
    ctl = tenant.headers(Permission.CONTROL)
    pause = {"expected_control_version": 0, "operation_id": "p-1", "reason": "maintenance"}
    first = _post(client, base + "/pause", ctl, pause)
    assert first.status_code == 200 and first.json()["paused"] is True
    again = _post(client, base + "/pause", ctl, pause)
    assert again.status_code == 200 and again.json() == first.json()
    stale = _post(client, base + "/resume", ctl, {**pause, "operation_id": "r-1"})
    assert stale.status_code == 409 and stale.json()["code"] == "control_version_conflict"
    assert stale.json()["control_version"] == 1
    other = _post(client, base + "/pause", ctl, {**pause, "reason": "something else"})
    assert other.status_code == 409 and other.json()["code"] == "operation_conflict"
    resumed = _post(client, base + "/resume", ctl,
                    {"expected_control_version": 1, "operation_id": "r-2", "reason": "done"})
    assert resumed.status_code == 200 and resumed.json()["paused"] is False
    # a failure goes to review; the reviewer recovers the step
    report(engine, ns, work(engine, ns, handlers=["a"])[0], fail=True)
    rv = tenant.headers(Permission.REVIEW)
    assert _post(client, base + "/review", ctl, {"action": "resolve", "operation_id": "x",
                                                 "reason": "r"}).status_code == 403
    blocked = _post(client, base + "/review", rv,
                    {"action": "resolve", "operation_id": "res-1", "reason": "try"})
    assert blocked.status_code == 409 and blocked.json()["code"] == "review_blocked"
    missing = _post(client, base + "/review", rv,
                    {"action": "recover", "operation_id": "rec-0", "reason": "r"})
    assert missing.status_code == 422
    detail = client.get(base, headers=tenant.headers(Permission.READ)).json()
    state_version = next(s["version"] for s in detail["steps"] if s["step_id"] == "a")
    recovered = _post(client, base + "/review", rv, {
        "action": "recover", "operation_id": "rec-1", "reason": "transient outage",
        "step_id": "a", "expected_state_version": state_version})
    assert recovered.status_code == 200, recovered.text
    out = recovered.json()
    assert out["workflow"]["status"] == "RUNNING"
    assert out["operation"]["actor"].startswith("token:")
    assert out["operation"]["new_activation_id"]
    report(engine, ns, work(engine, ns, handlers=["a"])[0], {})
    report(engine, ns, work(engine, ns, handlers=["b"])[0], {})
    done = client.get(base, headers=tenant.headers(Permission.READ)).json()
    assert done["status"] == "SUCCEEDED"
    cancel = _post(client, base + "/cancel", ctl,
                   {"expected_control_version": 2, "operation_id": "c-1", "reason": "late"})
    assert cancel.status_code == 409 and cancel.json()["code"] == "workflow_settled"
    unknown = _post(client, f"/v1/namespaces/{ns}/workflows/wf_nope/pause", ctl,
                    {**pause, "operation_id": "p-x"})
    assert unknown.status_code == 404


def test_instance_view_shows_operations_review_and_unknown_effects(engine: Engine) -> None:
    from tests.controls.test_review import EVIDENCE, _lose_lease, _unsafe

    client = client_for(engine)
    tenant = new_tenant(engine.db)
    ns = tenant.namespace
    publish(engine, ns, definition("view", [_unsafe("submit"), task("after")]))
    started = _post(client, f"/v1/namespaces/{ns}/workflows",
                    tenant.headers(Permission.START),
                    {"definition_id": "view", "input": {}, "idempotency_key": "v1"})
    wid = started.json()["workflow_id"]
    base = f"/v1/namespaces/{ns}/workflows/{wid}"
    read = tenant.headers(Permission.READ)
    fresh = client.get(base, headers=read).json()
    assert fresh["operations"] == [] and fresh["cancel_requested"] is False
    assert fresh["review"] == {"reason": None, "blocking_steps": [], "unknown_effects": []}
    ctl = tenant.headers(Permission.CONTROL)
    _post(client, base + "/pause", ctl,
          {"expected_control_version": 0, "operation_id": "vp-1", "reason": "window"})
    _post(client, base + "/resume", ctl,
          {"expected_control_version": 1, "operation_id": "vr-1", "reason": "window over"})
    claimed = _lose_lease(engine, ns, "submit")
    view = client.get(base, headers=read).json()
    assert view["status"] == "NEEDS_REVIEW" and view["paused"] is False
    assert view["control_version"] == 2
    assert view["review"]["reason"] == "effect_unknown"
    (blocking,) = view["review"]["blocking_steps"]
    assert blocking["step_id"] == "submit" and blocking["phase"] == "NEEDS_REVIEW"
    (unknown,) = view["review"]["unknown_effects"]
    assert unknown["step_id"] == "submit" and unknown["task_id"] == claimed.task_id
    assert unknown["conclusion"] is None
    ops = [(o["kind"], o["operation_id"], o["actor"]) for o in view["operations"]]
    assert [(k, i) for k, i, _ in ops] == [("pause", "vp-1"), ("resume", "vr-1")]
    assert all(actor.startswith("token:") for _, _, actor in ops)
    rv = tenant.headers(Permission.REVIEW)
    concluded = _post(client, base + "/review", rv, {
        "action": "conclude", "operation_id": "vc-1", "reason": "checked the partner",
        "step_id": "submit", "conclusion": "effect_confirmed_absent", "evidence": EVIDENCE})
    assert concluded.status_code == 200, concluded.text
    view = client.get(base, headers=read).json()
    (unknown,) = view["review"]["unknown_effects"]
    assert unknown["conclusion"]["conclusion"] == "effect_confirmed_absent"
    assert unknown["conclusion"]["evidence"] == EVIDENCE
    assert unknown["conclusion"]["operation_id"] == "vc-1"
    cancelled = _post(client, base + "/cancel", ctl,
                      {"expected_control_version": 2, "operation_id": "vx-1", "reason": "stop"})
    assert cancelled.status_code == 200, cancelled.text
    view = client.get(base, headers=read).json()
    assert view["cancel_requested"] is True
    assert [o["kind"] for o in view["operations"]] == [
        "pause", "resume", "review.conclude", "cancel"]
    history = client.get(base + "/history", headers=read).json()["items"]
    kinds = [h["kind"] for h in history]
    assert "control.paused" in kinds and "review.concluded" in kinds
    assert "control.cancel_requested" in kinds


def test_plain_task_entries_refuse_workflow_tasks(engine: Engine) -> None:
    client = client_for(engine)
    tenant = new_tenant(engine.db)
    ns = tenant.namespace
    publish(engine, ns, definition("owned", [task("a")]))
    _post(client, f"/v1/namespaces/{ns}/workflows", tenant.headers(Permission.START),
          {"definition_id": "owned", "input": {}, "idempotency_key": "o1"})
    (claimed,) = work(engine, ns, handlers=["a"])
    report(engine, ns, claimed, fail=True)  # failed: the one a plain retry would want
    path = f"/v1/namespaces/{ns}/tasks/{claimed.task_id}"
    every = tenant.headers(*Permission)
    refused = _post(client, path + "/cancel", every, {"reason": "x"})
    assert refused.status_code == 422
    assert refused.json()["problems"][0]["code"] == "workflow_task"
    for action in ("retry", "requeue", "restart"):  # no plain retry entry exists
        assert _post(client, path + "/" + action, every, {}).status_code in (404, 405)
    spec = client.get("/openapi.json").json()
    task_ops = [p for p in spec["paths"] if "/tasks/" in p]
    assert not [p for p in task_ops if p.rsplit("/", 1)[-1] not in (
        "{task_id}", "heartbeat", "complete", "cancel", "attempts", "events")]
    # the task records (#12) are reads only
    assert [m for p in task_ops if p.endswith(("/attempts", "/events"))
            for m in spec["paths"][p]] == ["get", "get"]
