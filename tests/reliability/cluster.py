"""Real engines for the kill tests and the soak: ``weave serve`` processes on fixed ports
of one database (so a killed engine restarts where its workers look for it), SDK workers,
and load that retries across a kill the way a client must (same idempotency key, signal
id, operation id).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import sqlalchemy as sa

from tests.invariants import assert_invariants
from tests.live_server import ServerProcess, start_server, weave_command
from weave_core.access.identity import Permission, create_namespace, create_token
from weave_core.foundation.faults import KILL_ENV
from weave_core.storage.db import Database
from weave_sdk import Client
from weave_sdk.errors import InvalidResponseError, ServerError, WeaveConnectionError

T = TypeVar("T")

TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")
RETRIED = (WeaveConnectionError, ServerError, InvalidResponseError, OSError)
"""What a client retries: the engine went away (or answered 5xx while going)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def retrying(fn: Callable[[], T], *, seconds: float = 90) -> T:
    """``fn()`` until it does not fail with a transport error (an engine being killed or
    restarted), as a client retries: the request must be idempotent."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return fn()
        except RETRIED:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def wait_until(condition: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(what)
        time.sleep(0.1)


@dataclass
class Engines:
    """``weave serve`` processes on one database, each on a port of its own."""

    database_url: str
    servers: dict[int, ServerProcess] = field(default_factory=dict)
    kills: int = 0

    def start(self, port: int | None = None, *, kill: str = "", extra: tuple[str, ...] = ()
              ) -> int:
        """Start an engine on ``port`` (a free one by default); ``kill`` arms its kill
        points (``WEAVE_FAULT_KILL``)."""
        port = port or free_port()
        self.servers[port] = start_server(self.database_url, "--port", str(port), *extra,
                                          env={KILL_ENV: kill})
        return port

    def url(self, port: int) -> str:
        return f"http://127.0.0.1:{port}"

    def wait_killed(self, port: int, timeout: float = 60) -> str:
        """Wait for the engine on ``port`` to die of SIGKILL; return its output."""
        server = self.servers[port]
        try:
            code = server.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("the engine was not killed:\n" + "".join(server.output)
                                 ) from None
        server.reader.join(10)
        if server.process.stdout is not None:
            server.process.stdout.close()
        assert code == -signal.SIGKILL, "".join(server.output)
        self.kills += 1
        return "".join(server.output)

    @contextmanager
    def restarting(self, port: int) -> Iterator[list[str]]:
        """While the block runs, an engine on ``port`` that dies of SIGKILL is started
        again on the same port, unarmed (a supervisor); the list gets each dead engine's
        output. At the end of the block the engine must have died at least once."""
        outputs: list[str] = []
        stop = threading.Event()

        def _watch() -> None:
            while not stop.is_set():
                server = self.servers[port]
                try:
                    server.process.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    continue
                outputs.append(self.wait_killed(port))
                self.start(port)

        watcher = threading.Thread(target=_watch, daemon=True)
        watcher.start()
        try:
            yield outputs
        finally:
            stop.set()
            watcher.join(60)

    def kill(self, port: int) -> None:
        """kill -9 the engine on ``port`` (from outside)."""
        server = self.servers[port]
        os.kill(server.process.pid, signal.SIGKILL)
        self.wait_killed(port)

    def rss_kib(self, port: int) -> int:
        with open(f"/proc/{self.servers[port].process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()


@dataclass
class Tenant:
    """A namespace with an admin token on the engines' database."""

    db: Database
    namespace: str
    token: str

    @classmethod
    def create(cls, db: Database, namespace: str) -> Tenant:
        create_namespace(db, namespace)
        return cls(db, namespace, create_token(db, namespace, [Permission.ADMIN]))

    def client(self, base_url: str) -> Client:
        return Client(base_url, self.token, self.namespace)

    def statuses(self) -> dict[str, str]:
        return {str(r.instance_id): str(r.status) for r in self.db.read(lambda c: c.execute(
            sa.text("SELECT instance_id, status FROM weave_instances WHERE namespace = :ns"),
            {"ns": self.namespace}).all())}

    def drain(self, expected: int, seconds: float = 120,
              nudge: Callable[[], None] | None = None) -> dict[str, str]:
        """Wait until ``expected`` instances are all terminal; return their statuses."""
        deadline = time.monotonic() + seconds
        while True:
            found = self.statuses()
            if len(found) == expected and all(s in TERMINAL for s in found.values()):
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"not drained in {seconds} s: {sorted(found.items())}")
            if nudge is not None:
                nudge()
            time.sleep(0.25)

    def assert_exactly_once(self, steps_per_instance: int) -> None:
        """Every step of every instance succeeded once in its history, its result was
        consumed once, and ``weave check`` (the real command) is clean."""
        rows = self.db.read(lambda c: c.execute(sa.text(
            "SELECT t.instance_id, t.step_id, COUNT(*) AS n FROM weave_instances i "
            "JOIN weave_transitions t ON t.instance_id = i.instance_id "
            "WHERE i.namespace = :ns AND t.kind = 'step.succeeded' "
            "GROUP BY t.instance_id, t.step_id"), {"ns": self.namespace}).all())
        assert {int(r.n) for r in rows} == {1}, rows
        per_instance: dict[str, int] = {}
        for r in rows:
            per_instance[r.instance_id] = per_instance.get(r.instance_id, 0) + 1
        assert set(per_instance.values()) == {steps_per_instance}, per_instance
        assert_invariants(self.db, [self.namespace])
        checked = subprocess.run(
            weave_command("check", "--database-url", self.db.url, "--namespace",
                          self.namespace, "--json"),
            capture_output=True, text=True, timeout=120)
        assert checked.returncode == 0, checked.stdout + checked.stderr


@contextmanager
def sdk_worker(tenant: Tenant, base_url: str, handlers: dict[str, Callable[..., Any]], *,
               queue: str = "q", concurrency: int = 2) -> Iterator[Any]:
    """An SDK Worker serving ``handlers`` (version 1) in a thread for the block."""
    from weave_sdk.worker import Worker

    worker = Worker(tenant.client(base_url), queue=queue, concurrency=concurrency,
                    wait_seconds=1, shutdown_grace=5)
    for name, fn in handlers.items():
        worker.handler(name)(fn)
    with worker.running():
        yield worker


__all__ = ["Engines", "Tenant", "free_port", "retrying", "sdk_worker", "wait_until"]
