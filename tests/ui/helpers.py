"""The console tests' scenario: a claims process with every kind of step, driven through
the real HTTP API (publish, start, a worker claiming and completing, signals)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from tests.live_server import LiveServer

QUEUE = "claims"


def _task(step_id: str) -> dict[str, Any]:
    return {"id": step_id, "kind": "task", "queue": QUEUE,
            "handler": {"name": step_id, "version": "1"}, "input": {}}


def claim_definition(version: str = "1") -> dict[str, Any]:
    """validate → approval signal → branch on the amount → pay and notify in parallel."""
    settle: dict[str, Any] = {"pay": [_task("submit_payment")], "notify": [_task("notify")]}
    if version != "1":
        settle["archive"] = [{"id": "archive_wait", "kind": "timer", "seconds": 5}]
    return {
        "schema_version": 1, "definition_id": "claim", "version": version,
        "input_schema": {"type": "object", "required": ["claim_id", "amount"],
                         "properties": {"claim_id": {"type": "string"},
                                        "amount": {"type": "number"}}},
        "failure_policy": "REVIEW",
        "steps": [
            _task("validate"),
            {"id": "approval", "kind": "signal", "name": "approval",
             "correlation_key": {"$ref": "input.claim_id"}},
            {"id": "route", "kind": "branch", "cases": [
                {"when": {"gt": [{"$ref": "input.amount"}, 1000]},
                 "steps": [_task("senior_check")]},
                {"default": True, "steps": [_task("auto_approve")]}]},
            {"id": "settle", "kind": "parallel", "branches": settle},
        ],
    }


class Api:
    """The API as a client and a worker would use it, with the server's admin token."""

    def __init__(self, server: LiveServer) -> None:
        self.server = server
        self.base = f"{server.base_url}/v1/namespaces/{server.namespace}"
        self.client = httpx.Client(headers={"Authorization": f"Bearer {server.token}"},
                                   timeout=30)

    def publish(self, document: dict[str, Any]) -> None:
        r = self.client.post(f"{self.base}/definitions", json=document)
        assert r.status_code in (200, 201), r.text

    def start(self, inp: dict[str, Any], key: str, definition_id: str = "claim") -> str:
        r = self.client.post(f"{self.base}/workflows", json={
            "definition_id": definition_id, "input": inp, "idempotency_key": key})
        assert r.status_code in (200, 201), r.text
        return str(r.json()["workflow_id"])

    def get(self, wid: str) -> dict[str, Any]:
        r = self.client.get(f"{self.base}/workflows/{wid}")
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    def work(self, handler: str, *, fail: bool = False, output: Any = None) -> None:
        """Claim one task of ``handler`` and complete it (or fail it, not retryable)."""
        for _ in range(30):
            r = self.client.post(f"{self.base}/queues/{QUEUE}/claim", json={
                "worker_id": "ui-test-worker", "handlers": [{"name": handler, "version": "1"}],
                "wait_seconds": 1})
            assert r.status_code == 200, r.text
            tasks = r.json()["tasks"]
            if tasks:
                break
        else:
            raise AssertionError(f"no {handler} task became claimable")
        (task,) = tasks
        body: dict[str, Any] = {"attempt_id": task["attempt_id"]}
        if fail:
            body |= {"outcome": "failed", "error": {"type": "partner_down",
                                                    "message": "payment partner timed out",
                                                    "retryable": False}}
        else:
            body |= {"outcome": "succeeded", "output": output if output is not None else {}}
        done = self.client.post(f"{self.base}/tasks/{task['task_id']}/complete", json=body)
        assert done.status_code == 200, done.text

    def signal(self, wid: str, claim_id: str) -> None:
        r = self.client.post(f"{self.base}/workflows/{wid}/signals", json={
            "signal_id": f"approve-{claim_id}", "name": "approval",
            "correlation_key": claim_id, "payload": {"approved": True}})
        assert r.status_code in (200, 202), r.text

    def pause(self, wid: str, expected: int) -> None:
        r = self.client.post(f"{self.base}/workflows/{wid}/pause", json={
            "expected_control_version": expected, "operation_id": f"api-p-{wid[-6:]}",
            "reason": "someone else, elsewhere"})
        assert r.status_code == 200, r.text

    def until(self, wid: str, check: Callable[[dict[str, Any]], bool],
              timeout: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            view = self.get(wid)
            if check(view):
                return view
            assert time.monotonic() < deadline, view
            time.sleep(0.1)


def phase(view: dict[str, Any], step_id: str) -> str | None:
    return next((s["phase"] for s in view["steps"] if s["step_id"] == step_id), None)


def to_review(api: Api, claim_id: str = "c-1001", amount: Any = 250) -> str:
    """An instance whose payment failed: NEEDS_REVIEW, reason task_failed."""
    wid = api.start({"claim_id": claim_id, "amount": amount}, key=claim_id)
    api.work("validate", output={"ok": True})
    api.until(wid, lambda v: phase(v, "approval") == "ACTIVE")
    api.signal(wid, claim_id)
    api.work("auto_approve", output={"approved_amount": amount})
    api.work("notify")
    api.work("submit_payment", fail=True)
    api.until(wid, lambda v: v["status"] == "NEEDS_REVIEW")
    return wid
