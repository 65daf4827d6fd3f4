"""The worker runtime: run named, versioned handlers for the tasks of one queue.

::

    from weave_sdk import Client
    from weave_sdk.worker import Worker, RetryableError

    worker = Worker(Client(), queue="jobs", concurrency=8)

    @worker.handler("validate", version="1")
    def validate(job: JobInput) -> Verdict:      # pydantic models from the type hints
        ...

    worker.run()   # until SIGTERM / SIGINT: stop claiming, finish or report in-flight work

Threads, not an event loop, carry the hot path: each of the ``concurrency`` slots is a
thread with its own kept-alive connection that runs a task's handler, reports it with
``claim_next`` and runs the task that comes back, so a busy slot makes one request per
task and a synchronous handler runs where the request is made (no hand-off). One thread
long-polls claims for idle slots, one heartbeats every running attempt (a third of its
lease; it also sees cancellation and lost attempts). ``async`` handlers run on an event
loop (the caller's under :meth:`Worker.run_async`, else one of the worker's own).
See docs/worker-guide.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue as queues
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, Final
from urllib.parse import quote

from weave_sdk._wire import Connection
from weave_sdk._worker_attempts import AttemptRunner
from weave_sdk._worker_parts import Backoff, Beats, Claimed, CpuMeter
from weave_sdk.client import AsyncClient, Client, _Settings
from weave_sdk.errors import WeaveSDKError
from weave_sdk.exactjson import dumps
from weave_sdk.handlers import (
    HandlerDef,
    HandlerError,
    NonRetryableError,
    RetryableError,
    TaskContext,
    handler,
)

logger = logging.getLogger("weave_sdk.worker")

DEFAULT_WAIT_SECONDS: Final = 20
MAX_BATCH: Final = 32
_REPORT_ATTEMPTS: Final = 6
_TIMEOUT_S: Final = 30.0


@dataclass(frozen=True)
class WorkerStats:
    """What a worker did and what it cost: CPU of the worker's own threads.

    :param tasks_completed: tasks reported (succeeded, failed or cancelled).
    :param cpu_seconds: CPU time of the threads the worker runs (slots, claimer,
        heartbeats, its own event loop), handlers included.
    """

    tasks_completed: int
    cpu_seconds: float

    @property
    def cpu_per_task(self) -> float | None:
        """Seconds of CPU per reported task (``None`` before the first)."""
        return self.cpu_seconds / self.tasks_completed if self.tasks_completed else None


class Worker(AttemptRunner):
    """Runs handlers for the tasks of one queue.

    :param client: a ``Client`` or ``AsyncClient`` giving the server URL, token and
        namespace (default: ``WEAVE_URL``, ``WEAVE_TOKEN``, ``WEAVE_NAMESPACE``).
    :param queue: the queue to claim from.
    :param handlers: handlers declared with :func:`handler` (more with :meth:`handler`).
    :param concurrency: tasks run at once (default 4), one thread each.
    :param worker_id: shown in attempts (default ``host-pid``).
    :param wait_seconds: long-poll length of one claim (1..30, default 20).
    :param shutdown_grace: seconds in-flight tasks get to finish after a stop signal;
        tasks still running then are reported as retryable ``worker_shutdown`` failures.
    :param poll_grace: seconds a claim long poll in flight at :meth:`stop` may still
        answer (tasks it hands out are run) before it is cut (default 0: at once, so an
        idle worker stops within a second; the server drops a poll whose client left).
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
        poll_grace: float = 0.0,
    ) -> None:
        settings = _Settings(None, None, None) if client is None else client._settings
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
        self.poll_grace = poll_grace
        self._handlers: dict[tuple[str, str], HandlerDef] = {}
        for h in handlers:
            self._add(h)
        self.completed = 0  # tasks reported (tests and logs read it)
        self._stop = threading.Event()
        self._idle = threading.Condition(threading.RLock())
        self._busy = 0
        self._inbox: queues.SimpleQueue[Claimed | None] = queues.SimpleQueue()
        self._beats = Beats(self._heartbeat, self._connection)
        self._cpu = CpuMeter()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._claimer: Connection | None = None
        self._count_lock = threading.Lock()
        self._claim_next = b""

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

    @property
    def stats(self) -> WorkerStats:
        """Tasks completed and the CPU the worker's threads used so far."""
        return WorkerStats(self.completed, self._cpu.seconds())

    # --- running -----------------------------------------------------------------

    def run(self, *, install_signal_handlers: bool = True) -> None:
        """Run until SIGTERM/SIGINT (or :meth:`stop`); returns after a graceful drain.

        Off the main thread no signal handler is installed (Python allows them only
        there): stop such a worker with :meth:`stop`, or use :meth:`running`.
        """
        main = threading.current_thread() is threading.main_thread()
        if not (install_signal_handlers and main):
            self._serve(None)
            return

        def on_signal(signum: int, frame: FrameType | None) -> None:
            self.stop()

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            self._serve(None)
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)

    async def run_async(self, *, install_signal_handlers: bool = False) -> None:
        """Run the worker from asyncio; ``async`` handlers run on the calling loop."""
        loop = asyncio.get_running_loop()
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop)
        try:
            await asyncio.to_thread(self._serve, loop)
        except asyncio.CancelledError:
            self.stop()
            raise
        finally:
            if install_signal_handlers:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)

    @contextlib.contextmanager
    def running(self) -> Iterator[Worker]:
        """Run in a background thread for the ``with`` block, then stop and drain.

        An error that ends the worker is raised when the block ends.
        """
        failure: list[BaseException] = []

        def target() -> None:
            try:
                self._serve(None)
            except BaseException as exc:
                logger.exception("worker %s stopped by an error", self.worker_id)
                failure.append(exc)

        thread = threading.Thread(target=target, name=f"weave-worker-{self.queue}",
                                  daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.stop()
            thread.join(self.shutdown_grace + 15)
        if failure:
            raise failure[0]

    def stop(self) -> None:
        """Ask the worker to stop claiming and drain (thread-safe, signal-safe)."""
        self._stop.set()
        claimer = self._claimer
        if claimer is None:
            return
        if self.poll_grace <= 0:  # cut the long poll in flight: an idle worker stops at once
            claimer.abort()
        else:  # let it answer briefly, then cut it
            timer = threading.Timer(self.poll_grace, claimer.abort)
            timer.daemon = True
            timer.start()

    def _serve(self, loop: asyncio.AbstractEventLoop | None) -> None:
        if not self._handlers:
            raise ValueError("the worker has no handlers")
        declared = [{"name": n, "version": v} for n, v in sorted(self._handlers)]
        self._claim_body = {"worker_id": self.worker_id, "handlers": declared}
        self._claim_next = dumps({**self._claim_body, "max_tasks": 1}).encode()
        own_loop, loop_thread = None, None
        if loop is None and any(h.is_async for h in self._handlers.values()):
            own_loop = asyncio.new_event_loop()
            loop_thread = threading.Thread(target=self._cpu.track(own_loop.run_forever),
                                           name="weave-worker-loop", daemon=True)
            loop_thread.start()
            loop = own_loop
        self._loop = loop
        slots = [threading.Thread(target=self._cpu.track(self._slot), daemon=True,
                                  name=f"weave-worker-slot-{n}")
                 for n in range(self.concurrency)]
        beats = threading.Thread(target=self._cpu.track(self._beats.run), daemon=True,
                                 name="weave-worker-heartbeats")
        for thread in (*slots, beats):
            thread.start()
        claimer = self._claimer = self._connection()
        logger.info("worker started", extra={
            "server": self._settings.base_url, "namespace": self._settings.namespace,
            "queue": self.queue, "handlers": ", ".join(f"{n}@{v}" for n, v in self._handlers),
            "concurrency": self.concurrency, "worker_id": self.worker_id})
        try:
            self._cpu.track(self._claim_loop)(claimer)
        finally:
            self._claimer = None
            self._drain()
            for _ in slots:
                self._inbox.put(None)
            for thread in slots:
                thread.join(1.0)
            self._beats.stop()
            beats.join(1.0)
            claimer.close()
            if own_loop is not None and loop_thread is not None:
                own_loop.call_soon_threadsafe(own_loop.stop)
                loop_thread.join(5.0)
                if not loop_thread.is_alive():
                    own_loop.close()
            self._loop = None
            self._stop.clear()
            logger.info("worker stopped", extra={"worker_id": self.worker_id,
                                                 "tasks_completed": self.completed})

    def _claim_loop(self, conn: Connection) -> None:
        path = self._path(f"/queues/{quote(self.queue, safe='')}/claim")
        backoff = Backoff()
        while not self._stop.is_set():
            with self._idle:
                while self._busy >= self.concurrency and not self._stop.is_set():
                    self._idle.wait(1.0)
                free = self.concurrency - self._busy
            if self._stop.is_set():
                break
            body = dumps({**self._claim_body, "max_tasks": min(free, MAX_BATCH),
                          "wait_seconds": self.wait_seconds}).encode()
            try:
                data = self._post(conn, path, body, self.wait_seconds + _TIMEOUT_S)
            except (WeaveSDKError, OSError) as exc:
                if not self._stop.is_set():
                    delay = backoff.next_delay()
                    logger.warning("claim failed; retrying", extra={
                        "error": str(exc), "failures": backoff.failures,
                        "retry_in_s": round(delay, 2)})
                    self._stop.wait(delay)
                continue
            failures = backoff.reset()
            if failures:
                logger.info("claims work again", extra={"failures": failures})
            tasks = [Claimed.from_json(t) for t in data["tasks"]]
            with self._idle:
                self._busy += len(tasks)
            for task in tasks:
                self._inbox.put(task)

    def _drain(self) -> None:
        """Give in-flight tasks ``shutdown_grace`` to finish, then report the rest (on a
        connection of its own: stop() cut the claimer's)."""
        deadline = time.monotonic() + self.shutdown_grace
        with self._idle:
            if self._busy:
                logger.info("draining %d in-flight task(s)", self._busy)
            while self._busy and time.monotonic() < deadline:
                self._idle.wait(min(0.5, max(0.0, deadline - time.monotonic())))
        abandoned = self._beats.abandon_all()
        if not abandoned:
            return
        conn = self._connection()
        for running in abandoned:
            if running.future is not None:
                running.future.cancel()
            report = self._failure(RetryableError("the worker shut down mid-task",
                                                  type="worker_shutdown"))
            task = running.task
            status, _ = self._report(conn, task, report, claim_next=False)
            logger.warning("attempt abandoned at shutdown", extra={
                "handler": f"{task.handler}@{task.handler_version}", "task": task.task_id,
                "attempt": task.attempt_no, "outcome": "abandoned",
                "error_type": "worker_shutdown", "task_status": status})
        conn.close()



async def run_workers(*workers: Worker) -> None:
    """Run several workers (several queues) in one process until they are stopped."""
    await asyncio.gather(*(w.run_async() for w in workers))


__all__ = [
    "HandlerDef",
    "HandlerError",
    "NonRetryableError",
    "RetryableError",
    "TaskContext",
    "Worker",
    "WorkerStats",
    "handler",
    "run_workers",
]
