"""``result()`` without polling: long polls of ``GET …/workflows/{id}/result``.

The route answers as soon as the instance is done (``SUCCEEDED``, ``FAILED``,
``CANCELLED`` or ``NEEDS_REVIEW``) or when ``wait_seconds`` (at most 30 per request here)
ran out, with a small status document instead of the whole description. Only an
unsuccessful end reads ``describe()``, once, to build the error that says why. A server
without the route (``405``, or a ``404`` that is not ``not_found``) is read the older way:
``describe()`` at a growing interval.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import httpx
from pydantic import BaseModel, ConfigDict

from weave_sdk.outcomes import outcome_error, timeout_error
from weave_sdk.views import WorkflowStatus

if TYPE_CHECKING:
    from weave_sdk._calls import _Call, _Settings
    from weave_sdk.workflows import AsyncWorkflowHandle, WorkflowDescription, WorkflowHandle

LONG_POLL_MAX_S: Final = 30.0
"""The longest ``wait_seconds`` one request asks for."""
_READ_MARGIN_S: Final = 15.0


class ResultAnswer(BaseModel):
    """The route's answer: where the instance is and, once it succeeded, its output."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    workflow_id: str
    status: WorkflowStatus
    done: bool
    paused: bool = False
    revision: int = 0
    output: Any = None
    review_reason: str | None = None
    settled_at: datetime | None = None
    updated_at: datetime | None = None


def _read(response: httpx.Response) -> ResultAnswer | None:
    from weave_sdk._answers import _expect, _model, api_error

    if response.status_code == 405:
        return None
    if response.status_code == 404:
        error = api_error(response)
        if error.code == "not_found":
            raise error  # no such instance
        return None  # a server without the route
    return _model(ResultAnswer, _expect(response, 200), response)


def result_call(settings: _Settings, workflow_id: str, wait: float) -> _Call[ResultAnswer | None]:
    from weave_sdk._calls import _Call, _segment

    path = settings.ns_path(f"/workflows/{_segment(workflow_id, 'workflow_id')}/result")
    seconds = f"{max(0.0, min(wait, LONG_POLL_MAX_S)):.3f}".rstrip("0").rstrip(".")
    return _Call("GET", f"{path}?wait_seconds={seconds}", _read,
                 timeout=wait + _READ_MARGIN_S)


class Clock:
    """The caller's timeout: what is left of it, and the interval of the older polling."""

    def __init__(self, timeout: float | None, initial: float, maximum: float) -> None:
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must be >= 0 (or None to wait for ever)")
        if initial <= 0 or maximum < initial:
            raise ValueError("need 0 < poll_initial <= poll_max")
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.delay = initial
        self.maximum = maximum

    def left(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def wait(self) -> float:
        """``wait_seconds`` of the next long poll."""
        left = self.left()
        return LONG_POLL_MAX_S if left is None else min(left, LONG_POLL_MAX_S)

    def expired(self) -> bool:
        left = self.left()
        return left is not None and left <= 0

    def next_sleep(self, view: WorkflowDescription) -> float:
        """Seconds to sleep before the next read; raises the timeout error when none is left."""
        sleep = self.delay
        self.delay = min(self.delay * 1.5, self.maximum)
        left = self.left()
        if left is not None:
            if left <= 0:
                assert self.timeout is not None
                raise timeout_error(view, self.timeout)
            sleep = min(sleep, left)
        return sleep


def _settled(view: WorkflowDescription) -> bool:
    """Whether reading stops at ``view``; raises the outcome error when unsuccessful."""
    if view.status is WorkflowStatus.SUCCEEDED:
        return True
    error = outcome_error(view)
    if error is not None:
        raise error
    return False


def wait_for_result(handle: WorkflowHandle, clock: Clock) -> Any:
    """The output of ``handle``'s instance once it succeeded (see ``WorkflowHandle.result``)."""
    client = handle._client
    while True:
        answer = client._run(result_call(client._settings, handle.workflow_id, clock.wait()))
        if answer is None:
            return _poll(handle.describe, clock)
        if answer.done and answer.status is WorkflowStatus.SUCCEEDED:
            return answer.output
        if answer.done and _settled(view := handle.describe()):
            return view.output  # it moved on to SUCCEEDED in between
        if clock.expired():
            assert clock.timeout is not None
            raise timeout_error(handle.describe(), clock.timeout)


def _poll(describe: Callable[[], WorkflowDescription], clock: Clock) -> Any:
    while True:
        view = describe()
        if _settled(view):
            return view.output
        time.sleep(clock.next_sleep(view))


async def wait_for_result_async(handle: AsyncWorkflowHandle, clock: Clock) -> Any:
    """:func:`wait_for_result` for an ``AsyncWorkflowHandle``."""
    client = handle._client
    while True:
        call = result_call(client._settings, handle.workflow_id, clock.wait())
        answer = await client._run(call)
        if answer is None:
            return await _poll_async(handle.describe, clock)
        if answer.done and answer.status is WorkflowStatus.SUCCEEDED:
            return answer.output
        if answer.done and _settled(view := await handle.describe()):
            return view.output
        if clock.expired():
            assert clock.timeout is not None
            raise timeout_error(await handle.describe(), clock.timeout)


async def _poll_async(describe: Callable[[], Awaitable[WorkflowDescription]],
                      clock: Clock) -> Any:
    while True:
        view = await describe()
        if _settled(view):
            return view.output
        await asyncio.sleep(clock.next_sleep(view))


__all__ = ["LONG_POLL_MAX_S", "Clock", "ResultAnswer", "wait_for_result",
           "wait_for_result_async"]
