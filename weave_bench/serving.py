"""The ``weave serve`` subprocesses, tenants, worker threads and definitions S1-S3, S8, S9 use."""

from __future__ import annotations

import asyncio
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from weave_core.access.identity import CLI_ACTOR, Permission, create_namespace, create_token
from weave_core.dispatch import set_namespace_quota, set_queue_capacity
from weave_core.storage.db import Database
from weave_sdk import Client
from weave_sdk.worker import Worker

QUEUE = "bench-rt"
DEADLOCK = re.compile(r"\b1213\b|deadlock", re.IGNORECASE)
"""A deadlock retry (1213) in a server's log."""
LOCK_WAIT = re.compile(r"\b1205\b|lock wait timeout", re.IGNORECASE)
"""A lock wait time-out retry (1205) in a server's log."""


@dataclass
class Server:
    """One ``weave serve`` subprocess; its output is kept to count deadlocks in the log."""

    database_url: str
    port: int
    extra: tuple[str, ...] = ()
    """More ``weave serve`` arguments (``--workers 2``)."""
    process: subprocess.Popen[str] | None = None
    reader: threading.Thread | None = None
    output: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> float:
        """Start and wait until /v1/health answers 200; return the seconds it took."""
        began = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-c", "import sys; from weave_http.cli import main; "
             "sys.exit(main())", "serve", "--host", "127.0.0.1", "--port", str(self.port),
             "--database-url", self.database_url, "--log-level", "warning", *self.extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        process = self.process

        def pump() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                self.output.append(line)

        self.reader = threading.Thread(target=pump, daemon=True)
        self.reader.start()
        while time.perf_counter() - began < timeout:
            if process.poll() is not None:
                raise RuntimeError("weave serve exited:\n" + "".join(self.output))
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=1).status_code == 200:
                    return time.perf_counter() - began
            except httpx.TransportError:
                pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError("weave serve did not become healthy:\n" + "".join(self.output))

    def kill(self) -> None:
        """kill -9: no drain, no lifespan shutdown."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self._close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close()

    def _close(self) -> None:
        if self.process is not None and self.process.stdout is not None:
            if self.reader is not None:
                self.reader.join(timeout=10)  # the pipe ends with the process
            self.process.stdout.close()

    def log_count(self, pattern: re.Pattern[str]) -> int:
        return sum(1 for line in self.output if pattern.search(line))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def running_servers(database_url: str, count: int, *extra: str) -> Iterator[list[Server]]:
    servers = [Server(database_url, free_port(), extra) for _ in range(count)]
    try:
        for server in servers:
            server.start()
        yield servers
    finally:
        for server in servers:
            server.stop()


@dataclass(frozen=True)
class Tenant:
    namespace: str
    token: str


def new_tenant(db: Database) -> Tenant:
    namespace = f"bench-rt-{secrets.token_hex(4)}"
    create_namespace(db, namespace)
    token = create_token(db, namespace, [Permission.ADMIN])
    set_namespace_quota(db, namespace, 1_000_000, actor=CLI_ACTOR)
    set_queue_capacity(db, namespace, QUEUE, 1_000_000, actor=CLI_ACTOR)
    return Tenant(namespace, token)


def client_for(server: Server, tenant: Tenant) -> Client:
    return Client(server.url, tenant.token, tenant.namespace, timeout=60)


@contextmanager
def running_workers(
    servers: Sequence[Server], tenant: Tenant, slots: int
) -> Iterator[list[Worker]]:
    """One SDK Worker per server, ``slots`` concurrent tasks each, in threads."""
    workers: list[Worker] = []
    threads: list[threading.Thread] = []
    for server in servers:
        worker = Worker(client_for(server, tenant), queue=QUEUE, concurrency=slots,
                        wait_seconds=5, shutdown_grace=10)

        @worker.handler("noop")
        def noop(data: Any) -> dict[str, bool]:
            return {"ok": True}

        thread = threading.Thread(target=lambda w=worker: asyncio.run(w.run_async()),
                                  daemon=True)
        thread.start()
        workers.append(worker)
        threads.append(thread)
    try:
        yield workers
    finally:
        for worker in workers:
            worker.stop()
        for thread in threads:
            thread.join(timeout=30)


def _noop(step_id: str) -> dict[str, Any]:
    # A 5 s heartbeat timeout is the lease: a task claimed in a reply that a killed engine
    # never sent (S9) is retried after 5 s instead of the 60 s default.
    return {"id": step_id, "kind": "task", "queue": QUEUE,
            "handler": {"name": "noop", "version": "1"}, "input": {},
            "timeouts": {"heartbeat": 5}}


def seq10() -> dict[str, Any]:
    return {"schema_version": 1, "definition_id": "bench-seq10", "version": "1",
            "input_schema": {"type": "object"}, "failure_policy": "REVIEW",
            "steps": [_noop(f"s{i}") for i in range(10)]}


def fan10() -> dict[str, Any]:
    return {"schema_version": 1, "definition_id": "bench-fan10", "version": "1",
            "input_schema": {"type": "object"}, "failure_policy": "REVIEW",
            "steps": [{"id": "fan", "kind": "parallel",
                       "branches": {f"b{i}": [_noop(f"f{i}")] for i in range(10)}},
                      _noop("after")]}


__all__ = [
    "DEADLOCK",
    "LOCK_WAIT",
    "QUEUE",
    "Server",
    "Tenant",
    "client_for",
    "fan10",
    "free_port",
    "new_tenant",
    "running_servers",
    "running_workers",
    "seq10",
]
