"""A worker you can see: ``weave worker`` as a real process against the session's real
``weave serve`` (MariaDB): its start-up line, one line per attempt (a success, a retry, a
failure), no httpx request lines, the stop time of an idle worker after SIGTERM, and the
back-off while the server is unreachable."""

from __future__ import annotations

import itertools
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tests.dispatch.test_worker_e2e import api, create, wait_settled
from tests.live_server import LiveServer, weave_command
from weave_core.storage.schema import weave_task_events
from weave_sdk import Client
from weave_sdk._worker_parts import Backoff
from weave_sdk.logs import JsonFormatter, TextFormatter, configure_logging
from weave_sdk.worker import Worker

pytestmark = pytest.mark.mysql

WORKER_MODULE = '''
import httpx, os
from weave_core.storage.schema import weave_task_events
from weave_sdk import Client
from weave_sdk.worker import NonRetryableError, TaskContext, Worker

worker = Worker(Client(), queue="seen", concurrency=2, wait_seconds=20)


@worker.handler("ok", version="3")
def ok(data: dict) -> dict:
    httpx.get(os.environ["WEAVE_URL"] + "/v1/health")  # would log a line at INFO
    return {"ok": True}


@worker.handler("flaky")
def flaky(data: dict, ctx: TaskContext) -> dict:
    if ctx.attempt_no == 1:
        raise ValueError("first attempt fails")
    return {"attempt": ctx.attempt_no}


@worker.handler("refuse")
def refuse(data: dict) -> None:
    raise NonRetryableError("no such order", type="bad_order")
'''


class WorkerProcess:
    """``weave worker seen_worker:worker`` with its stderr read line by line."""

    def __init__(self, server: LiveServer, tmp_path: Path, *options: str) -> None:
        (tmp_path / "seen_worker.py").write_text(textwrap.dedent(WORKER_MODULE))
        env = {**os.environ, "WEAVE_URL": server.base_url, "WEAVE_TOKEN": server.token,
               "WEAVE_NAMESPACE": server.namespace}
        self.process = subprocess.Popen(
            weave_command("worker", "seen_worker:worker", *options), cwd=tmp_path, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if text in line:
                    return line
            time.sleep(0.02)
        raise AssertionError(f"no line with {text!r} in:\n" + "\n".join(self.lines))

    def stop(self) -> float:
        """SIGTERM; the seconds until the process exited."""
        began = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        took = time.monotonic() - began
        self._reader.join(timeout=10)
        return took

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self._reader.join(timeout=10)
        if self.process.stderr is not None:
            self.process.stderr.close()


def test_worker_lines_for_a_success_a_retry_and_a_failure(
    weave_server: LiveServer, tmp_path: Path
) -> None:
    worker = WorkerProcess(weave_server, tmp_path, "--log-format", "json")
    try:
        started = json.loads(worker.wait_for('"worker started"'))
        ok_id = create(weave_server, "seen", "ok", {}, handler_version="3")
        flaky_id = create(weave_server, "seen", "flaky", {}, max_attempts=2,
                          backoff_seconds=0)
        bad_id = create(weave_server, "seen", "refuse", {})
        tasks = wait_settled(weave_server, [ok_id, flaky_id, bad_id])
        deadline = time.monotonic() + 10  # each line is written once its report is answered
        while sum('"message": "attempt ' in x for x in worker.lines) < 4:
            assert time.monotonic() < deadline, worker.lines
            time.sleep(0.02)
    finally:
        took = worker.stop()
        worker.kill()
    assert worker.process.returncode == 0
    assert {k: started[k] for k in ("level", "logger", "server", "namespace", "queue",
                                    "handlers", "concurrency")} == {
        "level": "info", "logger": "weave_sdk.worker", "server": weave_server.base_url,
        "namespace": weave_server.namespace, "queue": "seen",
        "handlers": "ok@3, flaky@1, refuse@1", "concurrency": 2}
    assert [t["status"] for t in tasks.values()] == ["SUCCEEDED", "SUCCEEDED", "FAILED"]

    lines = [json.loads(line) for line in worker.lines]
    attempts = [line for line in lines if line["message"].startswith("attempt ")]

    def line_of(task_id: str, attempt: int) -> dict[str, Any]:
        return next(a for a in attempts if a["task"] == task_id and a["attempt"] == attempt)

    ok = line_of(ok_id, 1)
    assert (ok["level"], ok["message"], ok["handler"], ok["outcome"], ok["task_status"]) == (
        "info", "attempt succeeded", "ok@3", "succeeded", "SUCCEEDED")
    assert ok["duration_ms"] >= 0 and "error_type" not in ok
    retry = line_of(flaky_id, 1)
    assert (retry["level"], retry["outcome"], retry["task_status"], retry["error_type"],
            retry["error_message"]) == ("warning", "retrying", "PENDING", "ValueError",
                                        "first attempt fails")
    assert line_of(flaky_id, 2)["outcome"] == "succeeded"
    bad = line_of(bad_id, 1)
    assert (bad["level"], bad["outcome"], bad["handler"], bad["error_type"],
            bad["error_message"]) == ("warning", "failed", "refuse@1", "bad_order",
                                      "no such order")
    assert len(attempts) == 4  # one line per attempt, nothing else about them
    assert not [line for line in lines if line["logger"].startswith(("httpx", "httpcore"))]
    assert lines[-1]["message"] == "worker stopped" and lines[-1]["tasks_completed"] == 4
    assert took < 5


def test_an_idle_worker_stops_within_a_second_of_sigterm(
    weave_server: LiveServer, tmp_path: Path
) -> None:
    worker = WorkerProcess(weave_server, tmp_path)  # text lines, a 20 s claim long poll
    try:
        first = worker.wait_for("worker started")
        time.sleep(0.5)  # the long poll is in flight
    finally:
        took = worker.stop()
        worker.kill()
    assert worker.process.returncode == 0
    assert took < 1.0, (took, worker.lines)
    assert " INFO weave_sdk.worker: worker started server=" in first
    assert "handlers=\"ok@3, flaky@1, refuse@1\" concurrency=2" in first
    assert "worker stopped" in worker.lines[-1]
    # a task created now is claimed by nobody: the cut poll left no RUNNING attempt behind
    task_id = create(weave_server, "seen", "ok", {}, handler_version="3")
    time.sleep(1.5)
    assert api(weave_server, "GET", f"/tasks/{task_id}")["status"] == "PENDING"


def test_claims_back_off_with_jitter_while_the_server_is_unreachable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    worker = Worker(Client("http://127.0.0.1:1", "wv_x", "nowhere"), queue="q",
                    wait_seconds=1)

    @worker.handler("noop")
    def noop(data: object) -> None:
        return None

    with caplog.at_level(logging.WARNING, logger="weave_sdk.worker"), worker.running():
        time.sleep(2.5)
    failures = [r for r in caplog.records if r.getMessage() == "claim failed; retrying"]
    delays = [r.retry_in_s for r in failures]  # type: ignore[attr-defined]
    assert 2 <= len(failures) <= 5, delays  # 0.25-0.5 s, 0.5-1 s, 1-2 s ...
    counted = [r.failures for r in failures]  # type: ignore[attr-defined]
    assert counted == list(range(1, len(failures) + 1))
    assert all(d1 <= d2 for d1, d2 in itertools.pairwise(delays)), delays
    assert "Connection refused" in failures[0].error  # type: ignore[attr-defined]


def test_backoff_doubles_to_its_cap_with_jitter_and_resets() -> None:
    backoff = Backoff(base=0.5, cap=4.0)
    for ceiling in (0.5, 1.0, 2.0, 4.0, 4.0, 4.0):
        delay = backoff.next_delay()
        assert ceiling / 2 <= delay <= ceiling
    assert backoff.reset() == 6 and backoff.failures == 0
    assert 0.25 <= backoff.next_delay() <= 0.5
    draws = {round(Backoff().next_delay(), 6) for _ in range(20)}
    assert len(draws) > 1  # jittered: workers that failed together do not retry together


def test_log_formats_carry_the_same_fields(capsys: pytest.CaptureFixture[str]) -> None:
    record = logging.makeLogRecord({"name": "weave_sdk.worker", "levelno": logging.WARNING,
                                    "levelname": "WARNING", "msg": "attempt %s",
                                    "args": ("failed",), "task": "tsk_1", "attempt": 2,
                                    "error_message": "a b", "error_type": None})
    doc = json.loads(JsonFormatter().format(record))
    assert doc["message"] == "attempt failed" and doc["level"] == "warning"
    assert (doc["task"], doc["attempt"], doc["error_message"]) == ("tsk_1", 2, "a b")
    assert "error_type" not in doc and doc["time"].endswith("Z")
    text = TextFormatter().format(record)
    assert text.endswith(' WARNING weave_sdk.worker: attempt failed task=tsk_1 attempt=2 '
                         'error_message="a b"')
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        configure_logging("json", "info", stream=sys.stderr)
        assert logging.getLogger("httpx").level == logging.WARNING
        configure_logging("text", "debug", stream=sys.stderr)
        assert logging.getLogger("httpx").level == logging.DEBUG
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in saved[0]:
            root.addHandler(h)
        root.setLevel(saved[1])
        logging.getLogger("httpx").setLevel(logging.NOTSET)
        logging.getLogger("httpcore").setLevel(logging.NOTSET)


def test_a_busy_worker_abandons_what_outlives_its_grace(
    weave_server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Stopped mid-task with a short ``shutdown_grace``: the attempt is reported as a
    retryable ``worker_shutdown`` failure (so the task goes back to PENDING), and the
    handler's later result is never reported."""
    worker = Worker(Client(weave_server.base_url, weave_server.token, weave_server.namespace),
                    queue="busy", wait_seconds=1, shutdown_grace=0.5)
    release = threading.Event()
    began = threading.Event()

    @worker.handler("stuck")
    def stuck(data: object) -> dict[str, bool]:
        began.set()
        release.wait(30)
        return {"late": True}

    task_id = create(weave_server, "busy", "stuck", {}, max_attempts=3, backoff_seconds=60)
    try:
        with caplog.at_level(logging.INFO, logger="weave_sdk.worker"), worker.running():
            assert began.wait(20)
            stopping = time.monotonic()
        took = time.monotonic() - stopping
    finally:
        release.set()
    task = api(weave_server, "GET", f"/tasks/{task_id}")
    assert (task["status"], task["attempts_used"]) == ("PENDING", 1)  # retried later
    with weave_server.db.engine.connect() as conn:  # the report, in the task's events
        events = conn.execute(sa.select(weave_task_events.c.event_type,
                                        weave_task_events.c.payload)
                              .where(weave_task_events.c.task_id == task_id)).all()
    assert any("worker_shutdown" in str(payload) for _, payload in events), events
    assert 0.5 <= took < 5
    line = next(r for r in caplog.records if getattr(r, "outcome", None) == "abandoned")
    assert (line.task, line.task_status, line.levelno) == (  # type: ignore[attr-defined]
        task_id, "PENDING", logging.WARNING)
    time.sleep(0.3)  # the handler returns now: nothing more is reported or logged for it
    assert api(weave_server, "GET", f"/tasks/{task_id}")["revision"] == task["revision"]
    assert not [r for r in caplog.records if getattr(r, "outcome", None) == "succeeded"]
