"""``weave_sdk.testing``: the in-process environment, time skipping and the fixture
(issue #14 item 2). SQLite: the environment's own embedded database."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pydantic

from weave_sdk import Classify, Workflow, WorkflowStatus, handler, ref
from weave_sdk.testing import WorkflowEnvironment

pytest_plugins = ["weave_sdk.pytest_plugin"]


class Job(pydantic.BaseModel):
    job_id: str


class JobState(pydantic.BaseModel):
    status: str


CALLS: dict[str, int] = {}


@handler("carrier_status")
def carrier_status(job: Job) -> JobState:
    CALLS[job.job_id] = CALLS.get(job.job_id, 0) + 1
    return JobState(status="DONE" if CALLS[job.job_id] >= 3 else "IN_TRANSIT")


def day_then_poll() -> Workflow:
    wf = Workflow("day-then-poll", version="1", queue="ship", input_schema={"type": "object"},
                  deadline=timedelta(days=3))
    wf.timer("cool_off", duration=timedelta(days=1))
    wf.poll("delivered", handler=carrier_status, input={"job_id": ref.input("job_id")},
            max_rounds=10, interval=timedelta(seconds=30), deadline=timedelta(hours=1),
            classify=Classify("status", pending=["IN_TRANSIT"], succeeded=["DONE"],
                              failed=["LOST"]))
    return wf


def test_a_day_long_timer_and_a_polling_carrier_finish_in_under_two_seconds() -> None:
    with WorkflowEnvironment([carrier_status], queue="ship") as env:
        started = time.monotonic()  # publish, start, a day, three rounds 30 s apart
        output = env.run(day_then_poll(), {"job_id": "j-1"})
        elapsed = time.monotonic() - started
        skipped = env.skipped
    assert output == {"status": "DONE"} and CALLS["j-1"] == 3
    assert skipped >= timedelta(days=1, seconds=55)  # the day and two 30 s intervals, less
    # the real time that passed meanwhile
    assert elapsed < 2.0, elapsed


def test_sleep_moves_the_clock_for_a_waiting_signal(workflow_env: WorkflowEnvironment) -> None:
    wf = Workflow("approve", version="1", input_schema={"type": "object"})
    wf.signal("approval", name="approval", correlation_key=ref.input("id"),
              timeout=timedelta(hours=2))
    client = workflow_env.client
    client.publish(wf)
    handle = client.start("approve", {"id": "a-1"})
    before = workflow_env.now()
    workflow_env.sleep(timedelta(hours=1))       # not yet: the wait is still open
    assert workflow_env.now() - before >= timedelta(hours=1)
    assert handle.describe().status is WorkflowStatus.WAITING
    handle.signal("approval", correlation_key="a-1", payload={"ok": True})
    assert workflow_env.result(handle, timeout=10) == {"ok": True}


def test_without_skipping_a_signal_wait_stays_open(workflow_env: WorkflowEnvironment) -> None:
    wf = Workflow("timeout", version="1", input_schema={"type": "object"},
                  failure_policy="FAIL_AFTER_SETTLED")
    wf.signal("approval", name="approval", correlation_key="k", timeout=timedelta(hours=1))
    client = workflow_env.client
    client.publish(wf)
    handle = client.start("timeout", {})
    time.sleep(0.1)
    assert handle.describe().status is WorkflowStatus.WAITING
    try:
        workflow_env.result(handle, timeout=10)   # skipping: the hour passes, the wait times out
    except Exception as exc:
        failure: Any = exc
    else:
        raise AssertionError("the signal timeout did not fire")
    assert failure.status is WorkflowStatus.FAILED and failure.step_id == "approval"
