"""The worker's tracing hook without OpenTelemetry installed (weave_sdk._tracing), issue
#13 item 2: the handler is simply called."""

from __future__ import annotations

import subprocess
import sys


def test_the_worker_calls_the_handler_without_opentelemetry() -> None:
    script = """
import sys
sys.modules["opentelemetry"] = None  # as if opentelemetry-api were not installed
from weave_sdk._tracing import traced
from weave_sdk._worker_parts import Claimed
task = Claimed.from_json({"task_id": "tsk_1", "attempt_id": "att_1", "attempt_no": 1,
    "handler": "h", "handler_version": "1", "input": {}, "heartbeat_timeout": 30,
    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
assert task.traceparent is not None
with traced(task) as span:
    print(span, 2 + 3)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None 5"
