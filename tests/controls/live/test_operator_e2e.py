"""An operator drives a real ``weave serve`` with the CLI and the SDK (MariaDB)."""

from __future__ import annotations

import os
import subprocess
from typing import Any

import httpx

from tests.live_server import LiveServer, weave_command
from weave_sdk import Client
from weave_sdk import controls as sdk

DOC = {"schema_version": 1, "definition_id": "ops", "version": "1",
       "input_schema": {"type": "object"}, "failure_policy": "REVIEW",
       "steps": [{"id": "a", "kind": "task", "queue": "q",
                  "handler": {"name": "a", "version": "1"}, "input": {}}]}


def _cli(server: LiveServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WEAVE_URL": server.base_url, "WEAVE_TOKEN": server.token,
           "WEAVE_NAMESPACE": server.namespace}
    return subprocess.run(weave_command(*args), env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def _worker(server: LiveServer, outcome: str) -> None:
    headers = {"Authorization": f"Bearer {server.token}"}
    base = f"{server.base_url}/v1/namespaces/{server.namespace}"
    claimed: Any = []
    for _ in range(50):
        claimed = httpx.post(f"{base}/queues/q/claim", headers=headers, json={
            "worker_id": "w", "handlers": [{"name": "a", "version": "1"}],
            "wait_seconds": 1}).json()["tasks"]
        if claimed:
            break
    (task,) = claimed
    body: dict[str, Any] = {"attempt_id": task["attempt_id"], "outcome": outcome}
    if outcome == "failed":
        body["error"] = {"type": "boom", "message": "down", "retryable": False}
    else:
        body["output"] = {}
    r = httpx.post(f"{base}/tasks/{task['task_id']}/complete", headers=headers, json=body)
    assert r.status_code == 200, r.text


def test_operator_cli_and_sdk(weave_server: LiveServer) -> None:
    with Client(weave_server.base_url, weave_server.token, weave_server.namespace) as client:
        client.publish(DOC)
        first = client.start("ops", {}, idempotency_key="one").workflow_id
        paused = _cli(weave_server, "pause", first, "--reason", "maintenance",
                      "--operation-id", "cli-p1")
        assert paused.returncode == 0, paused.stderr
        assert client.get_workflow(first).paused is True
        stale = _cli(weave_server, "pause", first, "--reason", "again",
                     "--expected-version", "0")
        assert stale.returncode == 1 and "error[control_version_conflict]" in stale.stderr
        view = sdk.resume(client, first, reason="done")
        assert view.paused is False and view.control_version == 2
        cancelled = sdk.cancel(client, first, reason="not needed")
        assert cancelled.status.value in ("CANCELLING", "CANCELLED")
        assert client.get_workflow(first).status.value == "CANCELLED"

        second = client.start("ops", {}, idempotency_key="two").workflow_id
        _worker(weave_server, "failed")
        for _ in range(100):
            if client.get_workflow(second).status.value == "NEEDS_REVIEW":
                break
        assert client.get_workflow(second).status.value == "NEEDS_REVIEW"
        blocked = _cli(weave_server, "review", second, "resolve", "--reason", "try")
        assert blocked.returncode == 1 and "error[review_blocked]" in blocked.stderr
        recovered = _cli(weave_server, "review", second, "recover", "--step", "a",
                         "--reason", "outage over", "--json")
        assert recovered.returncode == 0, recovered.stderr
        _worker(weave_server, "succeeded")
        for _ in range(100):
            if client.get_workflow(second).status.value == "SUCCEEDED":
                break
        detail = client.get_workflow(second)
        assert detail.status.value == "SUCCEEDED"
        assert len([a for a in detail.activations if a.step_id == "a"]) == 2


def test_operator_accepts_a_reviewed_result_from_the_cli(weave_server: LiveServer) -> None:
    """A handler's output broke the contract; the operator saw the real one in the channel
    and submits it with evidence from the CLI: the workflow completes from it."""
    step: dict[str, Any] = {"id": "a", "kind": "task", "queue": "q",
                            "handler": {"name": "a", "version": "1"}, "input": {},
                            "output_schema": {"type": "object", "required": ["job_id"],
                                              "properties": {"job_id": {"type": "string"}}}}
    doc = {**DOC, "definition_id": "ops-accept", "steps": [step]}
    with Client(weave_server.base_url, weave_server.token, weave_server.namespace) as client:
        client.publish(doc)
        wid = client.start("ops-accept", {}, idempotency_key="acc").workflow_id
        _worker(weave_server, "succeeded")  # output {}: no job_id
        for _ in range(100):
            if client.get_workflow(wid).status.value == "NEEDS_REVIEW":
                break
        assert client.get_workflow(wid).step("a").reason == "output_contract_violated"
        evidence = '{"ticket": "OPS-7", "console": "job J-1"}'
        usage = _cli(weave_server, "review", wid, "accept", "--step", "a", "--reason", "r")
        assert usage.returncode != 0 and "--output" in usage.stderr
        bad = _cli(weave_server, "review", wid, "accept", "--step", "a", "--output",
                   '{"job_id": 1}', "--evidence", evidence, "--reason", "typo")
        assert bad.returncode == 1 and "error[output_contract_violated]" in bad.stderr
        good = _cli(weave_server, "review", wid, "accept", "--step", "a", "--output",
                    '{"job_id": "J-1"}', "--evidence", evidence, "--reason",
                    "the channel shows job J-1", "--json")
        assert good.returncode == 0, good.stderr
        assert '"review.accept"' in good.stdout
        done = client.get_workflow(wid)
        assert done.status.value == "SUCCEEDED"
        assert done.step("a").output == {"job_id": "J-1"}
