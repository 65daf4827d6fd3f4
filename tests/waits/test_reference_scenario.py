"""DESIGN.md §12 end to end against a real ``weave serve`` (its own database and tick):
validate → approval signal → prepare → submit → receipt signal or bounded poll → complete.
Run twice: once the receipt wins, once polling finds the result. Submit runs once."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest

from tests.conftest import create_mysql_database, drop_mysql_database
from tests.live_server import start_server
from weave_core.access.identity import Permission, create_namespace, create_token
from weave_core.storage.db import Database
from weave_core.storage.migrate import upgrade

HANDLERS = ["validate", "prepare", "submit", "job_status"]


def _definition() -> dict[str, Any]:
    def task(step_id: str, idempotent: bool = True) -> dict[str, Any]:
        return {"id": step_id, "kind": "task", "queue": "jobs",
                "handler": {"name": step_id, "version": "1", "idempotent": idempotent},
                "input": {"job_id": {"$ref": "input.job_id"}}}

    return {
        "schema_version": 1, "definition_id": "external-job", "version": "1",
        "input_schema": {"type": "object", "required": ["job_id"]},
        "deadline_seconds": 3600, "failure_policy": "REVIEW",
        "steps": [
            task("validate"),
            {"id": "approval", "kind": "signal", "name": "approval",
             "correlation_key": {"$ref": "input.job_id"}, "timeout_seconds": 600},
            task("prepare"),
            task("submit", idempotent=False),
            {"id": "outcome", "kind": "poll", "queue": "jobs",
             "handler": {"name": "job_status", "version": "1"},
             "input": {"job_id": {"$ref": "input.job_id"}},
             "max_rounds": 20, "interval_seconds": 1, "deadline_seconds": 600,
             "attempts_per_round": 3,
             "classify": {"field": "status", "pending": ["QUEUED", "RUNNING"],
                          "succeeded": ["DONE"], "failed": ["REJECTED"]},
             "receipt": {"name": "receipt", "correlation_key": {"$ref": "input.job_id"}}},
        ],
    }


class Api:
    def __init__(self, base_url: str, token: str, namespace: str) -> None:
        self.http = httpx.Client(base_url=f"{base_url}/v1/namespaces/{namespace}",
                                 headers={"Authorization": f"Bearer {token}"}, timeout=30)
        self.ran: list[str] = []
        self.base_url, self.token, self.namespace = base_url, token, namespace

    def work(self, outputs: dict[str, Any], *, until: str, timeout_s: float = 20) -> None:
        """Claim and complete tasks of ``outputs`` until handler ``until`` has run."""
        end = time.monotonic() + timeout_s
        while until not in self.ran:
            assert time.monotonic() < end, f"{until} never became claimable; ran {self.ran}"
            got = self.http.post("/queues/jobs/claim", json={
                "worker_id": "ref", "handlers": [{"name": h, "version": "1"} for h in outputs],
                "max_tasks": 4, "wait_seconds": 1}).json()["tasks"]
            for claimed in got:
                self.ran.append(claimed["handler"])
                out = outputs[claimed["handler"]]
                if callable(out):
                    out = out()
                done = self.http.post(f"/tasks/{claimed['task_id']}/complete", json={
                    "attempt_id": claimed["attempt_id"], "outcome": "succeeded", "output": out})
                assert done.status_code == 200, done.text

    def signal(self, wid: str, name: str, key: str, payload: Any) -> httpx.Response:
        return self.http.post(f"/workflows/{wid}/signals", json={
            "signal_id": f"{name}-{secrets.token_hex(4)}", "name": name,
            "correlation_key": key, "payload": payload})

    def status(self, wid: str, want: str, timeout_s: float = 20) -> dict[str, Any]:
        end = time.monotonic() + timeout_s
        while True:
            view: dict[str, Any] = self.http.get(f"/workflows/{wid}").json()
            if view["status"] == want or time.monotonic() > end:
                return view
            time.sleep(0.1)


@pytest.fixture(scope="module")
def api() -> Iterator[Api]:
    url = create_mysql_database("weave_wref")
    upgrade(url)
    server = start_server(url)
    db = Database.from_url(url)
    try:
        namespace = f"ns-{secrets.token_hex(5)}"
        create_namespace(db, namespace)
        token = create_token(db, namespace, [Permission.ADMIN])
        client = Api(server.base_url, token, namespace)
        try:
            assert client.http.post("/definitions", json=_definition()).status_code == 201
            yield client
        finally:
            client.http.close()
    finally:
        db.dispose()
        server.stop()
        drop_mysql_database(url)


def _start(api: Api, job: str) -> str:
    api.ran = []
    started = api.http.post("/workflows", json={"definition_id": "external-job",
                                                 "input": {"job_id": job},
                                                 "idempotency_key": job})
    assert started.status_code == 201, started.text
    wid: str = started.json()["workflow_id"]
    api.work({"validate": {"ok": True}}, until="validate")
    assert api.signal(wid, "approval", job, {"by": "alice"}).status_code == 202
    api.work({"prepare": {"ready": True}, "submit": {"accepted": True}}, until="submit")
    return wid


def test_the_receipt_wins(api: Api) -> None:
    job = f"job-{secrets.token_hex(4)}"
    wid = _start(api, job)
    api.work({"job_status": {"status": "QUEUED"}}, until="job_status")  # round 1: pending
    assert api.signal(wid, "receipt", job, {"receipt": "R-77"}).status_code == 202
    view = api.status(wid, "SUCCEEDED")
    assert view["status"] == "SUCCEEDED", view
    assert view["output"] == {"receipt": "R-77"}
    (poll,) = [w for w in view["waits"] if w["step_id"] == "outcome"]
    assert poll["winner"] == "receipt"
    assert api.ran.count("submit") == 1  # never submitted twice
    assert {s["name"]: s["state"] for s in view["signals"]} == {"approval": "CONSUMED",
                                                               "receipt": "CONSUMED"}


def test_polling_finds_the_result(api: Api) -> None:
    job = f"job-{secrets.token_hex(4)}"
    wid = _start(api, job)
    statuses = iter([{"status": "QUEUED"}, {"status": "RUNNING"}, {"status": "DONE", "n": 3}])
    seen: list[Any] = []

    def status() -> Any:
        seen.append(next(statuses))
        return seen[-1]

    end = time.monotonic() + 30
    while len(seen) < 3:  # each later round is woken by the server's tick after 1 s
        assert time.monotonic() < end
        api.work({"job_status": status}, until="job_status", timeout_s=10)
        api.ran.remove("job_status")
    view = api.status(wid, "SUCCEEDED")
    assert view["status"] == "SUCCEEDED", view
    assert view["output"] == {"status": "DONE", "n": 3}
    rounds = [r for r in view["poll_rounds"]]
    assert [r["round"] for r in rounds] == [1, 2, 3]
    assert [r["status"] for r in rounds] == ["PENDING", "PENDING", "SUCCEEDED"]
    assert len({r["task_id"] for r in rounds}) == 3
    (poll,) = [w for w in view["waits"] if w["step_id"] == "outcome"]
    assert poll["winner"] == "poll_result"


def test_the_sdk_and_the_cli_deliver_signals(api: Api, capsys: pytest.CaptureFixture[str]
                                             ) -> None:
    from weave_http.cli import main
    from weave_sdk import Client
    from weave_sdk.signals import list_signals, send_signal

    job = f"job-{secrets.token_hex(4)}"
    started = api.http.post("/workflows", json={"definition_id": "external-job",
                                                 "input": {"job_id": job},
                                                 "idempotency_key": job})
    wid = started.json()["workflow_id"]
    with Client(api.base_url, api.token, api.namespace) as client:
        first = send_signal(client, wid, "approval", correlation_key=job,
                            payload={"by": "sdk"}, signal_id=f"sdk-{job}")
        again = send_signal(client, wid, "approval", correlation_key=job,
                            payload={"by": "sdk"}, signal_id=f"sdk-{job}")
        assert first.created and not again.created
        assert again.accepted_at == first.accepted_at and first.state == "ACCEPTED"
        handle = client.get_workflow_handle(wid)  # the handle's method is the same call
        assert handle.signal("approval", correlation_key=job, payload={"by": "sdk"},
                             signal_id=f"sdk-{job}").created is False
        conn = ["--url", api.base_url, "--token", api.token, "--namespace", api.namespace]
        code = main(["signal", wid, "receipt", "--correlation-key", job, "--payload",
                     '{"n": 1.10}', "--signal-id", f"cli-{job}", *conn])
        out = capsys.readouterr().out
        assert code == 0 and f"signal cli-{job} accepted: state ACCEPTED" in out
        code = main(["signal", wid, "receipt", "--correlation-key", job, "--payload",
                     '{"n": 2}', "--signal-id", f"cli-{job}", *conn])
        assert code == 1 and "error[signal_conflict]" in capsys.readouterr().err
        assert main(["signal", "wf_missing", "x", "--correlation-key", "k", *conn]) == 1
        assert "error[not_found]" in capsys.readouterr().err
        listed = list_signals(client, wid)
        assert [x.signal_id for x in listed] == [f"sdk-{job}", f"cli-{job}"]
        assert listed[1].payload == {"n": Decimal("1.10")}  # exact, never a float
