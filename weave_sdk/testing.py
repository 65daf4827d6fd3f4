"""Unit-test workflows against a real engine, with time skipping (``weave-sdk[testing]``).

::

    from weave_sdk.testing import WorkflowEnvironment

    def test_order_ships() -> None:
        with WorkflowEnvironment() as env:
            env.add_worker("orders", [validate, ship])
            assert env.run(order_flow, {"order_id": "A-1"})["shipped"] is True

``WorkflowEnvironment`` starts the engine in this process on a temporary SQLite database
(the embedded default), with one namespace and an admin token, serves the HTTP API on a
loopback port and hands out an SDK ``Client`` for it; workers run your handlers in
background threads. Nothing is mocked: definitions are published, validated and run by the
same code as in production.

Time is the database clock (``weave_clock``): ``env.sleep(timedelta(days=1))`` moves it, so
timers, signal timeouts, poll intervals, retries and deadlines that fall due fire at once.
While time skipping is on (``env.run``, ``env.result``, ``with env.skipping_time():``, or
``auto_skip=True``), whenever nothing is runnable — no task waiting for or held by a
worker, no due work for the engine — the clock jumps to the next due time. It never
skips while an instance is in review: a person acts there, not time. Off, a signal
wait stays open until the test sends the signal.

The engine is imported only when an environment starts: this module is part of the
``weave-sdk`` distribution, and the ``testing`` extra installs the engine.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

from weave_sdk.client import Client
from weave_sdk.definition import Workflow
from weave_sdk.errors import ConfigurationError
from weave_sdk.handlers import HandlerDef
from weave_sdk.worker import Worker
from weave_sdk.workflows import WorkflowHandle

_IDLE_S: Final = 0.005
"""How often the environment's engine thread looks for due work when there was none."""


def _engine_modules() -> Any:
    try:
        import uvicorn

        from weave_core import db, engine, identity, migrate
        from weave_core.runtime import tick
        from weave_http import app
    except ImportError as exc:  # the plain SDK: no engine installed
        raise ConfigurationError(
            "weave_sdk.testing needs the engine: pip install 'weave-sdk[testing]'") from exc
    return type("Engine", (), {"uvicorn": uvicorn, "db": db, "engine": engine,
                               "identity": identity, "migrate": migrate, "tick": tick,
                               "app": app})


def _runnable(db: Any, conn: Any, now: datetime) -> bool:
    """Whether a task waits for or is held by a worker, or work is due for the engine."""
    import sqlalchemy as sa

    from weave_core.schema import weave_inbox, weave_pending_advances, weave_tasks

    t, i, p = weave_tasks, weave_inbox, weave_pending_advances
    checks = (
        sa.select(t.c.task_id).where(sa.or_(
            t.c.status == "RUNNING", sa.and_(t.c.status == "PENDING", t.c.available_at <= now))),
        sa.select(i.c.id).where(i.c.state == "PENDING", i.c.available_at <= now),
        sa.select(p.c.id).where(p.c.state == "PENDING", p.c.due_at <= now),
    )
    return any(conn.execute(c.limit(1)).first() is not None for c in checks)


def _next_due(db: Any, conn: Any) -> tuple[datetime, datetime | None]:
    """Database time and the next time something falls due; ``None`` while anything is
    runnable now (a task waiting for or held by a worker, due inbox rows or advances),
    while an instance is in review (a person acts, not time) or none is in flight."""
    import sqlalchemy as sa

    from weave_core.schema import (
        weave_inbox,
        weave_instances,
        weave_pending_advances,
        weave_tasks,
    )

    now: datetime = db.now(conn)
    w = weave_instances
    statuses = set(conn.execute(sa.select(w.c.status).distinct()).scalars())
    if "NEEDS_REVIEW" in statuses or not statuses & {"RUNNING", "WAITING", "CANCELLING"}:
        return now, None
    t, i, p = weave_tasks, weave_inbox, weave_pending_advances
    if _runnable(db, conn, now):
        return now, None
    candidates = [
        conn.execute(sa.select(sa.func.min(t.c.available_at))
                     .where(t.c.status == "PENDING")).scalar(),
        conn.execute(sa.select(sa.func.min(i.c.available_at))
                     .where(i.c.state == "PENDING")).scalar(),
        conn.execute(sa.select(sa.func.min(p.c.due_at))
                     .where(p.c.state == "PENDING")).scalar(),
    ]
    due = [c for c in candidates if c is not None]
    if not due or min(due) <= now:
        return now, None
    return now, min(due)


class WorkflowEnvironment:
    """An in-process engine on a temporary SQLite database, for tests.

    :param handlers: handlers to run at once in a worker on ``queue``.
    :param queue: the queue of ``handlers``.
    :param namespace: the namespace made for the test (default ``test``).
    :param auto_skip: skip time whenever nothing is runnable, for the whole life of the
        environment (default: only inside ``run``, ``result`` and ``skipping_time``).
    :param database_url: a SQLite URL to use instead of a temporary file.
    """

    def __init__(self, handlers: Sequence[HandlerDef] = (), *, queue: str | None = None,
                 namespace: str = "test", auto_skip: bool = False,
                 database_url: str | None = None) -> None:
        if handlers and queue is None:
            raise ValueError("handlers need a queue: WorkflowEnvironment(handlers, queue=...)")
        self.namespace = namespace
        self.auto_skip = auto_skip
        self._handlers = list(handlers)
        self._queue = queue
        self._url = database_url
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._workers: list[Worker] = []
        self._stack = contextlib.ExitStack()
        self._lock = threading.RLock()
        self._skipping = 0
        self._offset = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.skipped = timedelta(0)
        """How far the clock was moved in all (``sleep`` and skips)."""

    # --- life ------------------------------------------------------------------------

    def __enter__(self) -> WorkflowEnvironment:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Open the database, create the namespace and token, serve, start the workers."""
        m = _engine_modules()
        if self._url is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="weave-test-")
            self._url = f"sqlite:///{Path(self._tmp.name) / 'weave.db'}"
        engine = m.engine.Engine.open(self._url)
        self._engine = engine
        self._stack.callback(engine.close)
        m.migrate.prepare_database(engine.db)
        m.identity.create_namespace(engine.db, self.namespace, actor="system:test")
        self.token: str = m.identity.create_token(
            engine.db, self.namespace, [m.identity.Permission.ADMIN], actor="system:test")
        self._m = m
        self.base_url = self._serve(m, engine)
        self.client = Client(self.base_url, self.token, self.namespace)
        self._stack.callback(self.client.close)
        self._thread = threading.Thread(target=self._engine_loop, daemon=True,
                                        name="weave-test-engine")
        self._thread.start()
        if self._handlers:
            assert self._queue is not None
            self.add_worker(self._queue, self._handlers)

    def _serve(self, m: Any, engine: Any) -> str:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        port = sock.getsockname()[1]
        config = m.uvicorn.Config(m.app.create_app(engine, tick=False), log_level="warning")
        server = m.uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True,
                                  name="weave-test-server")
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.005)

        def stop() -> None:
            server.should_exit = True
            thread.join(10)
            sock.close()

        self._stack.callback(stop)
        return f"http://127.0.0.1:{port}"

    def close(self) -> None:
        """Stop the workers, the engine thread and the server; delete the database."""
        for worker in self._workers:
            worker.stop()
        self._stack.close()  # workers, then the client, server and engine (last in, first out)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        if self._tmp is not None:
            self._tmp.cleanup()

    def add_worker(self, queue: str, handlers: Sequence[HandlerDef], *,
                   concurrency: int = 4) -> Worker:
        """Run ``handlers`` for ``queue`` in a background worker until the environment ends."""
        worker = Worker(Client(self.base_url, self.token, self.namespace), queue=queue,
                        handlers=handlers, concurrency=concurrency, wait_seconds=1,
                        worker_id=f"test-{queue}-{secrets.token_hex(3)}", shutdown_grace=5,
                        poll_grace=0.05)
        self._stack.enter_context(worker.running())
        self._workers.append(worker)
        return worker

    # --- time ------------------------------------------------------------------------

    def now(self) -> datetime:
        """Database time (naive UTC), with the skipped time."""
        db = self._engine.db
        result: datetime = db.read(db.now, name="test_now")
        return result

    def sleep(self, duration: timedelta | float) -> None:
        """Let what is runnable now finish (up to 30 s), then move the clock forward by
        ``duration`` and run what fell due."""
        seconds = duration.total_seconds() if isinstance(duration, timedelta) else duration
        if seconds < 0:
            raise ValueError("time only moves forward")
        db = self._engine.db
        deadline = time.monotonic() + 30
        while db.read(lambda conn: _runnable(db, conn, db.now(conn)), name="test_quiet"):
            if time.monotonic() > deadline:
                raise TimeoutError("work is still running after 30 s; the clock was not moved")
            time.sleep(_IDLE_S)
        with self._lock:
            self._move(seconds)
            while self._tick():
                pass

    @contextlib.contextmanager
    def skipping_time(self) -> Iterator[None]:
        """Skip to the next due time whenever nothing is runnable, inside the block."""
        with self._lock:
            self._skipping += 1
        try:
            yield
        finally:
            with self._lock:
                self._skipping -= 1

    def _move(self, seconds: float) -> None:
        self._offset += seconds
        self.skipped += timedelta(seconds=seconds)
        self._m.db.set_clock_offset(self._engine.db, self._offset)

    def _tick(self) -> bool:
        report = self._m.tick.run_tick(self._engine, budget_s=1.0)
        return bool(report.candidates)

    def _engine_loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                try:
                    skipping = bool(self._skipping) or self.auto_skip
                    busy = self._tick() or (skipping and self._skip())
                except Exception:
                    if self._stop.is_set():
                        return
                    raise
            if not busy:
                self._stop.wait(_IDLE_S)

    def _skip(self) -> bool:
        """Move the clock to the next due time if nothing is runnable; whether it moved."""
        db = self._engine.db
        now, due = db.read(lambda conn: _next_due(db, conn), name="test_next_due")
        if due is None or due <= now:
            return False
        self._move((due - now).total_seconds() + 0.001)
        return True

    # --- workflows ---------------------------------------------------------------------

    def result(self, handle: WorkflowHandle, timeout: float = 30.0) -> Any:
        """``handle.result(timeout)`` with time skipping on while it waits."""
        with self.skipping_time():
            return handle.result(timeout=timeout)

    def run(self, workflow: Workflow | Mapping[str, Any] | str, input: Any = None, *,
            idempotency_key: str | None = None, timeout: float = 30.0) -> Any:
        """Publish ``workflow`` (unless it is a definition id), start it, return its output.

        Time skips while it runs; failures raise the ``WorkflowError`` of ``result()``.
        """
        if isinstance(workflow, str):
            definition_id = workflow
        else:
            definition_id = self.client.publish(workflow).definition_id
        handle = self.client.start(definition_id, {} if input is None else input,
                                   idempotency_key=idempotency_key)
        return self.result(handle, timeout)


__all__ = ["WorkflowEnvironment"]
