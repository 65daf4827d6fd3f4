"""The shared log formats (weave_sdk.logformat) and the worker's tracing hook without
OpenTelemetry installed (weave_sdk._tracing), issue #13 items 2-3."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys

from weave_sdk.logformat import configure


def _emit(fmt: str) -> str:
    stream = io.StringIO()
    handler = configure(fmt, "info", stream=stream)
    log = logging.getLogger("weave_test.format")
    try:
        log.info("task %s", "done", extra={"task": "tsk_1", "namespace": "shop",
                                          "duration_ms": 12, "note": "two words"})
        try:
            raise ValueError("boom")
        except ValueError:
            log.error("failed", exc_info=True, extra={"workflow_id": "wf_1"})
        log.debug("not shown")
    finally:
        logging.getLogger().removeHandler(handler)
    return stream.getvalue()


def test_text_lines_append_the_ids_first_then_the_other_fields() -> None:
    first, second, *trace = _emit("text").splitlines()
    assert first.endswith(" INFO weave_test.format: task done namespace=shop task=tsk_1 "
                          'duration_ms=12 note="two words"')
    assert first[:4].isdigit() and first[23] == "Z"
    assert second.endswith("ERROR weave_test.format: failed workflow_id=wf_1")
    assert trace[0] == "Traceback (most recent call last):" and "ValueError: boom" in trace
    assert "not shown" not in "\n".join(trace)


def test_json_lines_are_one_object_each() -> None:
    lines = [json.loads(line) for line in _emit("json").splitlines()]
    assert len(lines) == 2
    assert lines[0] == {"ts": lines[0]["ts"], "level": "INFO", "logger": "weave_test.format",
                        "message": "task done", "namespace": "shop", "task": "tsk_1",
                        "duration_ms": 12, "note": "two words"}
    assert lines[1]["workflow_id"] == "wf_1" and "ValueError: boom" in lines[1]["exc_info"]


def test_the_worker_calls_the_handler_without_opentelemetry() -> None:
    script = """
import sys
sys.modules["opentelemetry"] = None  # as if opentelemetry-api were not installed
from weave_sdk._tracing import run_traced
from weave_sdk._worker_parts import Claimed
task = Claimed.from_json({"task_id": "tsk_1", "attempt_id": "att_1", "attempt_no": 1,
    "handler": "h", "handler_version": "1", "input": {}, "heartbeat_timeout": 30,
    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
assert task.traceparent is not None
print(run_traced(task, lambda a, b: a + b, 2, 3))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "5"
