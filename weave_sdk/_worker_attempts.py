"""One attempt in a worker slot: call the handler, heartbeat, report with ``claim_next``.

The :class:`~weave_sdk.worker.Worker` inherits these methods; they are apart so that the
worker module keeps to its threads and their life (start, claim, drain, stop).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import logging
import queue as queues
import threading
import time
from typing import Any, Final
from urllib.parse import quote

import pydantic

from weave_sdk._calls import _Settings
from weave_sdk._tracing import traced
from weave_sdk._wire import Connection, WireError, error_of
from weave_sdk._worker_parts import Backoff, Beats, Claimed, Running, bounded_traceback
from weave_sdk.errors import ConflictError, NotFoundError, WeaveAPIError, WeaveSDKError
from weave_sdk.exactjson import JSONDecodeError, dumps, loads
from weave_sdk.handlers import (
    HandlerDef,
    HandlerError,
    NonRetryableError,
    RetryableError,
    TaskContext,
    exact,
)

logger = logging.getLogger("weave_sdk.worker")

_REPORT_ATTEMPTS: Final = 6
_TIMEOUT_S: Final = 30.0


class AttemptRunner:
    """The per-attempt half of the worker (see ``Worker`` for the attributes)."""

    _settings: _Settings
    _handlers: dict[tuple[str, str], HandlerDef]
    _beats: Beats
    _stop: threading.Event
    _loop: asyncio.AbstractEventLoop | None
    _claim_next: bytes
    _count_lock: threading.Lock
    completed: int
    _inbox: queues.SimpleQueue[Claimed | None]
    _idle: threading.Condition
    _busy: int

    def _connection(self) -> Connection:
        return Connection(self._settings.base_url, self._settings.headers())

    def _path(self, rest: str) -> str:
        return self._settings.ns_path(rest)

    def _post(self, conn: Connection, path: str, body: bytes, timeout: float) -> Any:
        status, content = conn.post(path, body, timeout=timeout)
        if status != 200:
            raise error_of(status, content, conn.base_url + path)
        try:
            return loads(content)
        except JSONDecodeError as exc:
            raise WeaveSDKError(f"bad answer from {path}: {exc}") from exc

    # --- one slot ---------------------------------------------------------------------

    def _slot(self) -> None:
        conn = self._connection()
        try:
            while True:
                task = self._inbox.get()
                if task is None:
                    return
                try:
                    current: Claimed | None = task
                    while current is not None:
                        current = self._run_one(conn, current)
                except Exception:  # a bug of ours: never lose the slot
                    logger.exception("worker slot failed on task %s", task.task_id)
                finally:
                    with self._idle:
                        self._busy -= 1
                        self._idle.notify_all()
        finally:
            conn.close()

    def _run_one(self, conn: Connection, task: Claimed) -> Claimed | None:
        """Run one attempt, report it, and return the next task claimed in the report."""
        h = self._handlers.get((task.handler, task.handler_version))
        ctx = TaskContext(task.task_id, task.attempt_id, task.attempt_no, task.handler,
                          task.handler_version, task.deadline_at)
        if task.cancel_requested:
            ctx._cancel.set()
        running = Running(task, ctx, h is not None and h.is_async)
        self._beats.add(running)
        started = time.perf_counter()
        try:
            with traced(task):  # the step's trace, when the server traces
                output = self._call(h, task, ctx, running)
            report: dict[str, Any] = {"outcome": "succeeded", "output": output}
        except (asyncio.CancelledError, concurrent.futures.CancelledError):
            if running.lost or running.abandoned or not ctx.cancel_requested:
                if running.lost:  # (the drain logs the attempts it abandons)
                    self._log_attempt(task, "lost", time.perf_counter() - started, None)
                return None  # lost, or reported as abandoned by the drain
            report = {"outcome": "cancelled"}
        except HandlerError as exc:
            report = self._failure(exc)
        except Exception as exc:  # any other exception: a retryable failure of this attempt
            logger.debug("handler %s@%s raised on task %s", task.handler, task.handler_version,
                         task.task_id, exc_info=exc)
            report = self._failure(RetryableError(
                str(exc) or repr(exc), type=type(exc).__name__,
                details={"traceback": bounded_traceback(exc, skip_file=__file__)}))
        finally:
            self._beats.remove(running)
        took = time.perf_counter() - started
        if running.lost or running.abandoned:
            # The server moved on, or the drain reported it: a report would be refused.
            if running.lost:
                self._log_attempt(task, "lost", took, report)
            return None
        status, following = self._report(conn, task, report,
                                         claim_next=not self._stop.is_set())
        self._log_attempt(task, _outcome(report, status), took, report, status)
        return following

    def _log_attempt(self, task: Claimed, outcome: str, took: float,
                     report: dict[str, Any] | None, status: str | None = None) -> None:
        """The one line per attempt (``took``: the handler's seconds): INFO when it
        succeeded, WARNING otherwise."""
        level = logging.INFO if outcome == "succeeded" else logging.WARNING
        if not logger.isEnabledFor(level):
            return  # the hot path pays nothing for a line nobody reads
        error = (report or {}).get("error") or {}
        fields = {"handler": f"{task.handler}@{task.handler_version}", "task": task.task_id,
                  "attempt": task.attempt_no, "outcome": outcome,
                  "duration_ms": round(took * 1000, 1),
                  "error_type": error.get("type"), "error_message": error.get("message"),
                  "task_status": status}
        logger.log(level, "attempt %s", outcome, extra=fields)

    @staticmethod
    def _failure(exc: HandlerError) -> dict[str, Any]:
        error: dict[str, Any] = {"type": exc.type, "message": exc.message[:4096],
                                 "retryable": exc.retryable}
        if exc.details is not None:
            error["details"] = exact(exc.details)
        return {"outcome": "failed", "error": error}

    def _call(self, h: HandlerDef | None, task: Claimed, ctx: TaskContext,
              running: Running) -> Any:
        if h is None:
            raise NonRetryableError(f"no handler {task.handler!r} version "
                                    f"{task.handler_version!r}", type="unknown_handler")
        value: Any = task.input
        if h.input_model is not None:
            try:
                value = h.input_model.model_validate(task.input)
            except pydantic.ValidationError as exc:
                raise NonRetryableError(f"input does not match {h.input_model.__name__}: {exc}",
                                        type="invalid_input") from exc
        args = (value, ctx) if h.wants_context else (value,)
        result = self._await(h.fn(*args), running) if h.is_async else h.fn(*args)
        if inspect.isawaitable(result):
            result = self._await(result, running)
        if h.output_model is not None and not isinstance(result, h.output_model):
            try:
                result = h.output_model.model_validate(result)
            except pydantic.ValidationError as exc:
                raise NonRetryableError(f"output does not match "
                                        f"{h.output_model.__name__}: {exc}",
                                        type="invalid_output") from exc
        if isinstance(result, pydantic.BaseModel):
            return result.model_dump(mode="python")
        return exact(result)

    def _await(self, awaitable: Any, running: Running) -> Any:
        loop = self._loop
        assert loop is not None, "an async handler needs an event loop"

        async def call() -> Any:
            return await awaitable

        running.future = asyncio.run_coroutine_threadsafe(call(), loop)
        if running.lost or running.ctx.cancel_requested:
            running.future.cancel()
        return running.future.result()

    # --- heartbeats and reports ---------------------------------------------------------

    def _heartbeat(self, conn: Connection, running: Running) -> None:
        task = running.task
        path = self._path(f"/tasks/{quote(task.task_id, safe='')}/heartbeat")
        body = dumps({"attempt_id": task.attempt_id}).encode()
        try:
            data = self._post(conn, path, body, _TIMEOUT_S)
        except (ConflictError, NotFoundError) as exc:
            logger.warning("task %s: attempt lost (%s); abandoning it", task.task_id, exc.code)
            running.lost = True
            if running.future is not None:
                running.future.cancel()
            return
        except (WeaveSDKError, OSError) as exc:
            logger.warning("heartbeat of %s failed: %s", task.task_id, exc)
            return
        if data.get("cancel_requested") and not running.ctx.cancel_requested:
            running.ctx._cancel.set()
            if running.future is not None:
                running.future.cancel()  # an async handler is cancelled; a sync one reads ctx

    def _report(self, conn: Connection, task: Claimed, report: dict[str, Any], *,
                claim_next: bool) -> tuple[str | None, Claimed | None]:
        """Send the report (resent on network errors); the task's status the server
        answered (``None`` when refused or given up) and the next task it handed out."""
        head = json.dumps(task.attempt_id)
        body = (f'{{"attempt_id":{head},' + dumps(report)[1:-1]).encode()
        body += b',"claim_next":' + self._claim_next + b"}" if claim_next else b"}"
        path = self._path(f"/tasks/{quote(task.task_id, safe='')}/complete")
        backoff = Backoff(base=0.2, cap=5.0)
        for _ in range(_REPORT_ATTEMPTS):
            try:
                data = self._post(conn, path, body, _TIMEOUT_S)
            except (ConflictError, NotFoundError) as exc:
                logger.warning("report of task %s refused: %s", task.task_id, exc.code)
                return None, None
            except WeaveAPIError as exc:
                if exc.status < 500 and exc.status != 429:
                    logger.error("report of task %s refused: %s", task.task_id, exc)
                    return None, None
                logger.warning("report of task %s failed (%s); retrying", task.task_id, exc)
            except (WireError, WeaveSDKError, OSError) as exc:
                # The same report again is a replay on the server: safe to resend.
                logger.warning("report of task %s failed (%s); retrying", task.task_id, exc)
            else:
                with self._count_lock:
                    self.completed += 1
                following = data.get("next_tasks")
                status = (data.get("task") or {}).get("status")
                return status, Claimed.from_json(following[0]) if following else None
            time.sleep(backoff.next_delay())
        logger.error("giving up reporting task %s; its lease will expire", task.task_id)
        return None, None


def _outcome(report: dict[str, Any], status: str | None) -> str:
    """What became of the attempt: its report's outcome, ``retrying`` for a failure the
    server will retry (the task went back to PENDING), ``refused`` for a report not taken."""
    if status is None:
        return "refused"
    if report["outcome"] == "failed" and status == "PENDING":
        return "retrying"
    return str(report["outcome"])


__all__ = ["AttemptRunner"]
