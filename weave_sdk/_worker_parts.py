"""The worker's moving parts: a claimed task, a running attempt, the heartbeat thread, the
CPU meter of the worker's threads (``worker.stats``), the back-off while the server is
unreachable and the bounded traceback a failed attempt sends."""

from __future__ import annotations

import concurrent.futures
import logging
import random
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from weave_sdk.handlers import TaskContext

logger = logging.getLogger("weave_sdk.worker")

_IDLE_WAKE_S: Final = 0.2
"""The heartbeat thread looks at least this often: no wake-up is needed per task."""

TRACEBACK_FRAMES: Final = 30
"""At most this many innermost frames of a handler's exception are sent."""
TRACEBACK_CHARS: Final = 8192
"""...and at most this many characters (the end, where the exception was raised, is kept)."""


def bounded_traceback(exc: BaseException, skip_file: str | None = None) -> str:
    """The traceback of ``exc`` (chained causes included), its innermost frames only and
    cut to ``TRACEBACK_CHARS`` from the end; frames of ``skip_file`` (the worker's own
    call of the handler) at the top are left out."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None and tb.tb_frame.f_code.co_filename == skip_file:
        tb = tb.tb_next
    lines = traceback.format_exception(type(exc), exc, tb, limit=-TRACEBACK_FRAMES)
    text = "".join(lines).rstrip("\n")
    if len(text) > TRACEBACK_CHARS:
        text = "…" + text[-(TRACEBACK_CHARS - 1):]
    return text


class Backoff:
    """Exponential back-off with jitter: ``base`` doubling up to ``cap`` seconds, each delay
    drawn from its upper half so that many workers do not retry in step."""

    def __init__(self, base: float = 0.5, cap: float = 30.0) -> None:
        self.base = base
        self.cap = cap
        self.failures = 0

    def next_delay(self) -> float:
        """The delay before the next try; counts one more failure."""
        ceiling = min(self.cap, self.base * 2 ** min(self.failures, 32))
        self.failures += 1
        return random.uniform(ceiling / 2, ceiling)

    def reset(self) -> int:
        """Back to the first delay; the number of failures there were."""
        failures, self.failures = self.failures, 0
        return failures


@dataclass
class Claimed:
    """A task as the claim (or ``next_tasks``) handed it out."""

    task_id: str
    attempt_id: str
    attempt_no: int
    handler: str
    handler_version: str
    input: Any
    heartbeat_timeout: int
    deadline_at: str | None
    cancel_requested: bool
    traceparent: str | None = None
    """The step trace to continue around the handler (weave_sdk/_tracing.py)."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Claimed:
        return cls(
            task_id=data["task_id"], attempt_id=data["attempt_id"],
            attempt_no=int(data["attempt_no"]), handler=data["handler"],
            handler_version=data["handler_version"], input=data.get("input"),
            heartbeat_timeout=int(data["heartbeat_timeout"]),
            deadline_at=data.get("deadline_at"),
            cancel_requested=bool(data.get("cancel_requested")),
            traceparent=data.get("traceparent"),
        )


class Running:
    """One attempt in a slot: its heartbeat schedule and what the server said about it."""

    __slots__ = ("abandoned", "ctx", "due", "future", "interval", "is_async", "lost", "task")

    def __init__(self, task: Claimed, ctx: TaskContext, is_async: bool) -> None:
        self.task = task
        self.ctx = ctx
        self.is_async = is_async
        self.interval = max(0.2, task.heartbeat_timeout / 3)
        self.due = time.monotonic() + self.interval
        self.future: concurrent.futures.Future[Any] | None = None
        self.lost = False
        """The server no longer knows this attempt (superseded, lease expired)."""
        self.abandoned = False
        """The drain reported it as ``worker_shutdown``: the slot must not report it."""


class Beats:
    """The heartbeat thread: heartbeats each running attempt every third of its lease.

    Adding and removing an attempt is a dict operation under a lock (no wake-up): the
    thread looks every 0.2 s, the shortest interval there is.
    """

    def __init__(self, send: Callable[[Any, Running], None],
                 connect: Callable[[], Any]) -> None:
        self._send = send
        self._connect = connect
        self._lock = threading.Lock()
        self._running: dict[str, Running] = {}
        self._stopped = threading.Event()

    def add(self, running: Running) -> None:
        with self._lock:
            self._running[running.task.attempt_id] = running

    def remove(self, running: Running) -> None:
        with self._lock:
            self._running.pop(running.task.attempt_id, None)

    def abandon_all(self) -> list[Running]:
        """Every attempt still running, marked abandoned (the drain's grace is over)."""
        with self._lock:
            left = list(self._running.values())
            self._running.clear()
        for running in left:
            running.abandoned = True
        return left

    def stop(self) -> None:
        self._stopped.set()

    def run(self) -> None:
        conn = None
        try:
            while not self._stopped.wait(_IDLE_WAKE_S):
                now = time.monotonic()
                with self._lock:
                    due = [r for r in self._running.values() if r.due <= now]
                for running in due:
                    running.due = now + running.interval
                    if conn is None:
                        conn = self._connect()
                    self._send(conn, running)
        finally:
            if conn is not None:
                conn.close()


class CpuMeter:
    """CPU time of the threads a worker runs, read from their per-thread clocks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done = 0.0
        self._live: dict[int, tuple[int | None, float]] = {}

    def track(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` wrapped so that the thread running it is counted while it runs."""

        def tracked(*args: Any) -> Any:
            ident = threading.get_ident()
            start = time.thread_time()
            try:
                clock: int | None = time.pthread_getcpuclockid(ident)
            except (AttributeError, OSError):
                clock = None
            with self._lock:
                self._live[ident] = (clock, start)
            try:
                return fn(*args)
            finally:
                with self._lock:
                    self._live.pop(ident, None)
                    self._done += time.thread_time() - start

        return tracked

    def seconds(self) -> float:
        with self._lock:
            total = self._done
            for clock, start in self._live.values():
                if clock is not None:
                    try:
                        total += time.clock_gettime(clock) - start
                    except OSError:
                        pass
        return total


__all__ = ["Backoff", "Beats", "Claimed", "CpuMeter", "Running", "bounded_traceback"]
