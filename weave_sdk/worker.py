"""The worker runtime: run named, versioned handlers for the tasks of one queue.

::

    from weave_sdk import Client
    from weave_sdk.worker import Worker, RetryableError

    worker = Worker(Client(), queue="jobs", concurrency=8)

    @worker.handler("validate", version="1")
    def validate(job: JobInput) -> Verdict:      # pydantic models from the type hints
        ...

    worker.run()   # until SIGTERM / SIGINT: stop claiming, finish or report in-flight work

A handler is a plain or ``async`` function taking the task input (a pydantic model when its
first parameter is annotated with one, else the raw JSON value) and, optionally, a second
parameter receiving the :class:`TaskContext`. What it returns is the task output. Raising
:class:`NonRetryableError` fails the task for good; :class:`RetryableError` (or any other
exception) fails this attempt and lets the server retry within the task's budget.

The worker heartbeats every running attempt (a third of its lease), sees cancellation on
the heartbeat (``ctx.cancel_requested``; an async handler is cancelled), and completes
each task with ``claim_next``, so a busy worker makes one request per task.
See docs/worker-guide.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final, get_type_hints
from urllib.parse import quote

import httpx
import pydantic

from weave_sdk._json import JSONDecodeError, dumps, loads
from weave_sdk.client import AsyncClient, Client, _Settings, api_error
from weave_sdk.errors import ConflictError, NotFoundError, WeaveAPIError, WeaveSDKError

logger = logging.getLogger("weave_sdk.worker")

DEFAULT_WAIT_SECONDS: Final = 20
MAX_BATCH: Final = 32
_REPORT_ATTEMPTS: Final = 6


# --- what handlers raise ---------------------------------------------------------------


class HandlerError(WeaveSDKError):
    """Base of the errors a handler raises on purpose.

    :param message: shown to operators, stored with the task.
    :param type: a stable error type (default: the class name).
    :param details: JSON details stored with the error.
    """

    retryable: bool = True

    def __init__(self, message: str, *, type: str | None = None, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.type = type or self.__class__.__name__
        self.details = details


class RetryableError(HandlerError):
    """This attempt failed; the server retries the task within its attempt budget."""

    retryable = True


class NonRetryableError(HandlerError):
    """The task failed for good: retrying cannot help (bad input, business refusal)."""

    retryable = False


# --- handlers ------------------------------------------------------------------------


@dataclass
class TaskContext:
    """What a handler may know about the attempt it runs under."""

    task_id: str
    attempt_id: str
    attempt_no: int
    handler: str
    handler_version: str
    deadline_at: str | None
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def cancel_requested(self) -> bool:
        """True once the server asked to cancel this task (seen on a heartbeat)."""
        return self._cancel.is_set()


@dataclass(frozen=True)
class HandlerDef:
    """A registered handler: name, version and the function with its models."""

    name: str
    version: str
    fn: Callable[..., Any]
    idempotent: bool = True
    input_model: type[pydantic.BaseModel] | None = None
    output_model: type[pydantic.BaseModel] | None = None
    wants_context: bool = False

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    @classmethod
    def build(cls, fn: Callable[..., Any], name: str, version: str, idempotent: bool) -> HandlerDef:
        params = list(inspect.signature(fn).parameters.values())
        if not 1 <= len(params) <= 2:
            raise TypeError(f"handler {name!r} must take (input) or (input, ctx)")
        try:
            hints = get_type_hints(fn)
        except Exception:  # unresolved forward references: run untyped
            hints = {}
        first = hints.get(params[0].name)
        returned = hints.get("return")

        def model(value: Any) -> type[pydantic.BaseModel] | None:
            is_model = isinstance(value, type) and issubclass(value, pydantic.BaseModel)
            return value if is_model else None

        return cls(name, version, fn, idempotent, model(first), model(returned), len(params) == 2)


def handler(
    name: str, *, version: str = "1", idempotent: bool = True
) -> Callable[[Callable[..., Any]], HandlerDef]:
    """Declare a handler for ``Worker(handlers=[...])``.

    ``idempotent`` documents what the definition declares for this handler (the server
    decides retries from the task, which carries the flag from the definition).
    """

    def register(fn: Callable[..., Any]) -> HandlerDef:
        return HandlerDef.build(fn, name, version, idempotent)

    return register


def _exact(value: Any) -> Any:
    """Output as exact JSON: floats become the Decimal of their shortest repr."""
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, Mapping):
        return {str(k): _exact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_exact(v) for v in value]
    return value


# --- the worker ----------------------------------------------------------------------


@dataclass
class _Claimed:
    task_id: str
    attempt_id: str
    attempt_no: int
    handler: str
    handler_version: str
    input: Any
    heartbeat_timeout: int
    deadline_at: str | None
    cancel_requested: bool

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> _Claimed:
        return cls(
            task_id=data["task_id"], attempt_id=data["attempt_id"],
            attempt_no=int(data["attempt_no"]), handler=data["handler"],
            handler_version=data["handler_version"], input=data.get("input"),
            heartbeat_timeout=int(data["heartbeat_timeout"]),
            deadline_at=data.get("deadline_at"),
            cancel_requested=bool(data.get("cancel_requested")),
        )


class Worker:
    """Runs handlers for the tasks of one queue.

    :param client: a ``Client`` or ``AsyncClient`` giving the server URL, token and
        namespace (default: ``WEAVE_URL``, ``WEAVE_TOKEN``, ``WEAVE_NAMESPACE``).
    :param queue: the queue to claim from.
    :param handlers: handlers declared with :func:`handler` (more with :meth:`handler`).
    :param concurrency: tasks run at once (default 4). Sync handlers run in threads.
    :param worker_id: shown in attempts (default ``host-pid``).
    :param wait_seconds: long-poll length of one claim (1..30, default 20).
    :param shutdown_grace: seconds in-flight tasks get to finish after a stop signal;
        tasks still running then are reported as retryable ``worker_shutdown`` failures.
    """

    def __init__(
        self,
        client: Client | AsyncClient | None = None,
        *,
        queue: str,
        handlers: Sequence[HandlerDef] = (),
        concurrency: int = 4,
        worker_id: str | None = None,
        wait_seconds: int = DEFAULT_WAIT_SECONDS,
        shutdown_grace: float = 30.0,
    ) -> None:
        if client is None:
            settings = _Settings(None, None, None)
        else:
            settings = client._settings  # same package: the resolved URL, token, namespace
        settings.ns_path("")  # a namespace is required
        if not 1 <= concurrency <= 256:
            raise ValueError("concurrency must be 1..256")
        if not 1 <= wait_seconds <= 30:
            raise ValueError("wait_seconds must be 1..30")
        self._settings = settings
        self.queue = queue
        self.concurrency = concurrency
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}"
        self.wait_seconds = wait_seconds
        self.shutdown_grace = shutdown_grace
        self._handlers: dict[tuple[str, str], HandlerDef] = {}
        for h in handlers:
            self._add(h)
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._running: dict[str, asyncio.Task[None]] = {}
        self._http: httpx.AsyncClient | None = None
        self.completed = 0  # tasks reported (tests and logs read it)

    def _add(self, h: HandlerDef) -> None:
        key = (h.name, h.version)
        if key in self._handlers:
            raise ValueError(f"handler {h.name!r} version {h.version!r} registered twice")
        self._handlers[key] = h

    def handler(
        self, name: str, *, version: str = "1", idempotent: bool = True
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator registering a function as handler ``name`` ``version`` on this worker."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self._add(HandlerDef.build(fn, name, version, idempotent))
            return fn

        return register

    @property
    def handlers(self) -> list[HandlerDef]:
        return list(self._handlers.values())

    # --- running -----------------------------------------------------------------

    def run(self, *, install_signal_handlers: bool = True) -> None:
        """Run until SIGTERM/SIGINT (or :meth:`stop`); returns after a graceful drain."""
        asyncio.run(self.run_async(install_signal_handlers=install_signal_handlers))

    def stop(self) -> None:
        """Ask the worker to stop claiming and drain (thread-safe)."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            loop.call_soon_threadsafe(stop.set)

    async def run_async(self, *, install_signal_handlers: bool = False) -> None:
        """The worker loop (see :meth:`run`)."""
        if not self._handlers:
            raise ValueError("the worker has no handlers")
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._loop.add_signal_handler(sig, self._stop.set)
        timeout = httpx.Timeout(30.0, read=self.wait_seconds + 30.0)
        headers = {**self._settings.headers(), "content-type": "application/json"}
        async with httpx.AsyncClient(base_url=self._settings.base_url, headers=headers,
                                     timeout=timeout) as http:
            self._http = http
            try:
                await self._claim_loop()
            finally:
                await self._drain()
                self._http = None
                if install_signal_handlers:
                    for sig in (signal.SIGTERM, signal.SIGINT):
                        self._loop.remove_signal_handler(sig)

    async def _claim_loop(self) -> None:
        assert self._stop is not None
        stop_wait = asyncio.ensure_future(self._stop.wait())
        try:
            while not self._stop.is_set():
                free = self.concurrency - len(self._running)
                if free <= 0:
                    waiters: set[asyncio.Future[Any]] = {stop_wait, *self._running.values()}
                    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                    continue
                claim = asyncio.ensure_future(self._claim(min(free, MAX_BATCH)))
                await asyncio.wait({claim, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
                if not claim.done():
                    # Stopping mid long poll: the server may hand out tasks as we hang up.
                    # Let the poll finish briefly so nothing claimed is left unreported.
                    await asyncio.wait({claim}, timeout=1.0)
                    if not claim.done():
                        claim.cancel()
                        break
                try:
                    tasks = claim.result()
                except (WeaveSDKError, httpx.HTTPError) as exc:
                    logger.warning("claim failed: %s; retrying in 1 s", exc)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(asyncio.shield(stop_wait), 1.0)
                    continue
                for task in tasks:
                    self._start(task)
        finally:
            stop_wait.cancel()

    def _body(self, **values: Any) -> bytes:
        return dumps(values).encode("utf-8")

    def _path(self, rest: str) -> str:
        return self._settings.ns_path(rest)

    def _declared(self) -> list[dict[str, str]]:
        return [{"name": n, "version": v} for n, v in sorted(self._handlers)]

    async def _post(self, path: str, **values: Any) -> Any:
        assert self._http is not None
        response = await self._http.post(path, content=self._body(**values))
        if response.status_code != 200:
            raise api_error(response)
        try:
            return loads(response.content)
        except JSONDecodeError as exc:
            raise WeaveSDKError(f"bad answer from {path}: {exc}") from exc

    async def _claim(self, max_tasks: int) -> list[_Claimed]:
        data = await self._post(
            self._path(f"/queues/{quote(self.queue, safe='')}/claim"),
            worker_id=self.worker_id, handlers=self._declared(), max_tasks=max_tasks,
            wait_seconds=self.wait_seconds,
        )
        return [_Claimed.from_json(t) for t in data["tasks"]]

    def _start(self, task: _Claimed) -> None:
        self._running[task.attempt_id] = asyncio.ensure_future(self._execute(task))

    async def _drain(self) -> None:
        """Give in-flight tasks ``shutdown_grace`` to finish, then report the rest."""
        if not self._running:
            return
        pending = set(self._running.values())
        logger.info("draining %d in-flight task(s)", len(pending))
        _done, still = await asyncio.wait(pending, timeout=self.shutdown_grace)
        for task in still:
            task.cancel()
        if still:
            await asyncio.wait(still, timeout=10)

    # --- one task ---------------------------------------------------------------------

    async def _execute(self, task: _Claimed) -> None:
        current: _Claimed | None = task
        try:
            while current is not None:
                current = await self._run_one(current)
        finally:
            self._running.pop(task.attempt_id, None)

    async def _run_one(self, task: _Claimed) -> _Claimed | None:
        """Run one attempt, report it, and return the next task claimed in the report."""
        h = self._handlers.get((task.handler, task.handler_version))
        ctx = TaskContext(task.task_id, task.attempt_id, task.attempt_no, task.handler,
                          task.handler_version, task.deadline_at)
        if task.cancel_requested:
            ctx._cancel.set()
        work = asyncio.ensure_future(self._call(h, task, ctx))
        beat = asyncio.ensure_future(self._heartbeats(task, ctx, work))
        report: dict[str, Any]
        try:
            output = await asyncio.shield(work)
            report = {"outcome": "succeeded", "output": output}
        except asyncio.CancelledError:
            beat.cancel()
            lost = beat.done() and not beat.cancelled() and isinstance(
                beat.exception(), _LostAttemptError)
            if lost:
                return None  # the server moved on: a report would be refused
            if work.cancelled() and ctx.cancel_requested:
                report = {"outcome": "cancelled"}  # cancelled on request, not by us
            else:
                work.cancel()  # the drain timed out: report the attempt as abandoned
                report = self._failure(RetryableError("the worker shut down mid-task",
                                                      type="worker_shutdown"))
                await self._report(task, report, claim_next=False)
                return None
        except HandlerError as exc:
            report = self._failure(exc)
        except Exception as exc:  # any other exception: a retryable failure of this attempt
            logger.exception("handler %s failed", task.handler)
            report = self._failure(RetryableError(str(exc) or repr(exc),
                                                  type=type(exc).__name__))
        finally:
            beat.cancel()
        assert self._stop is not None
        return await self._report(task, report, claim_next=not self._stop.is_set())

    @staticmethod
    def _failure(exc: HandlerError) -> dict[str, Any]:
        error: dict[str, Any] = {"type": exc.type, "message": exc.message[:4096],
                                 "retryable": exc.retryable}
        if exc.details is not None:
            error["details"] = _exact(exc.details)
        return {"outcome": "failed", "error": error}

    async def _call(self, h: HandlerDef | None, task: _Claimed, ctx: TaskContext) -> Any:
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
        if h.is_async:
            result = await h.fn(*args)
        else:
            result = await asyncio.to_thread(h.fn, *args)
        if inspect.isawaitable(result):
            result = await result
        if h.output_model is not None:
            if not isinstance(result, h.output_model):
                try:
                    result = h.output_model.model_validate(result)
                except pydantic.ValidationError as exc:
                    raise NonRetryableError(f"output does not match "
                                            f"{h.output_model.__name__}: {exc}",
                                            type="invalid_output") from exc
        if isinstance(result, pydantic.BaseModel):
            result = result.model_dump(mode="python")
        return _exact(result)

    async def _heartbeats(self, task: _Claimed, ctx: TaskContext,
                          work: asyncio.Future[Any]) -> None:
        interval = max(0.2, task.heartbeat_timeout / 3)
        path = self._path(f"/tasks/{quote(task.task_id, safe='')}/heartbeat")
        while not work.done():
            await asyncio.sleep(interval)
            try:
                data = await self._post(path, attempt_id=task.attempt_id)
            except (ConflictError, NotFoundError) as exc:
                logger.warning("task %s: attempt lost (%s); abandoning it", task.task_id,
                               exc.code)
                work.cancel()
                raise _LostAttemptError from exc
            except (WeaveSDKError, httpx.HTTPError) as exc:
                logger.warning("heartbeat of %s failed: %s", task.task_id, exc)
                continue
            if data.get("cancel_requested") and not ctx.cancel_requested:
                ctx._cancel.set()
                h = self._handlers.get((task.handler, task.handler_version))
                if h is not None and h.is_async:
                    work.cancel()  # an async handler is cancelled; a sync one reads ctx

    async def _report(self, task: _Claimed, report: dict[str, Any], *,
                      claim_next: bool) -> _Claimed | None:
        values: dict[str, Any] = {"attempt_id": task.attempt_id, **report}
        if claim_next:
            values["claim_next"] = {"worker_id": self.worker_id, "handlers": self._declared(),
                                    "max_tasks": 1}
        path = self._path(f"/tasks/{quote(task.task_id, safe='')}/complete")
        for attempt in range(_REPORT_ATTEMPTS):
            try:
                data = await self._post(path, **values)
            except (ConflictError, NotFoundError) as exc:
                logger.warning("report of task %s refused: %s", task.task_id, exc.code)
                return None
            except WeaveAPIError as exc:
                if exc.status < 500 and exc.status != 429:
                    logger.error("report of task %s refused: %s", task.task_id, exc)
                    return None
                logger.warning("report of task %s failed (%s); retrying", task.task_id, exc)
            except (WeaveSDKError, httpx.HTTPError) as exc:
                # The same report again is a replay on the server: safe to resend.
                logger.warning("report of task %s failed (%s); retrying", task.task_id, exc)
            else:
                self.completed += 1
                following = data.get("next_tasks") or []
                return _Claimed.from_json(following[0]) if following else None
            await asyncio.sleep(min(5.0, 0.2 * 2**attempt))
        logger.error("giving up reporting task %s; its lease will expire", task.task_id)
        return None


class _LostAttemptError(Exception):
    """The server no longer recognises this attempt (superseded or lease expired)."""


async def run_workers(*workers: Worker) -> None:
    """Run several workers (several queues) in one process until one is stopped."""
    await asyncio.gather(*(w.run_async() for w in workers))


__all__ = [
    "HandlerDef",
    "HandlerError",
    "NonRetryableError",
    "RetryableError",
    "TaskContext",
    "Worker",
    "handler",
    "run_workers",
]
