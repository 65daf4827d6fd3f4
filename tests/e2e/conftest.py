"""End-to-end fixtures: a real ``weave serve`` and SDK ``Worker`` threads, driven through
the SDK client only.

``e2e`` runs on the session MariaDB server (``tests/live_server.py``) with a namespace of
the test; ``sqlite_e2e`` runs one ``weave serve`` process on a SQLite file of its module
(the embedded default serves exactly one engine process). Both hand out an ``E2E``: a
client of the namespace, ``publish`` and ``worker()`` (a context manager running an SDK
``Worker`` with the handlers of ``tests/e2e/handlers.py`` in a thread).
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.handlers import QUEUE, build_worker
from tests.invariants import assert_invariants
from tests.live_server import LiveServer, start_server
from weave_core.access.identity import Permission, create_namespace, create_token
from weave_core.storage.db import Database
from weave_sdk import Client
from weave_sdk.worker import Worker


@dataclass
class E2E:
    """A server URL, an admin token and a namespace, with an SDK client on them."""

    base_url: str
    token: str
    namespace: str
    client: Client
    workers: list[Worker] = field(default_factory=list)

    def publish(self, definition: Any) -> None:
        self.client.publish(definition)

    @contextmanager
    def worker(self, *, queue: str = QUEUE, concurrency: int = 4) -> Iterator[Worker]:
        """An SDK Worker on ``queue`` running in a thread until the block ends."""
        worker = build_worker(Client(self.base_url, self.token, self.namespace), queue=queue,
                              concurrency=concurrency)
        failure: list[BaseException] = []

        def run() -> None:
            try:
                asyncio.run(worker.run_async())
            except BaseException as exc:  # surfaced in the test, not lost in the thread
                failure.append(exc)

        thread = threading.Thread(target=run, name=f"worker-{queue}", daemon=True)
        thread.start()
        try:
            yield worker
        finally:
            worker.stop()
            thread.join(timeout=30)
        assert not thread.is_alive(), "the worker did not stop"
        assert not failure, failure

    def close(self) -> None:
        self.client.close()


@pytest.fixture
def e2e(weave_server: LiveServer) -> Iterator[E2E]:
    """MariaDB: the session's real ``weave serve`` and a fresh namespace with an admin token."""
    env = E2E(weave_server.base_url, weave_server.token, weave_server.namespace,
              Client(weave_server.base_url, weave_server.token, weave_server.namespace))
    yield env
    env.close()


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """One ``weave serve`` on a SQLite file of this module: (base_url, database_url)."""
    path: Path = tmp_path_factory.mktemp("sqlite-e2e") / "weave.db"
    url = f"sqlite:///{path}"
    server = start_server(url)  # serve migrates a SQLite database itself
    try:
        yield server.base_url, url
    finally:
        server.stop()


@pytest.fixture
def sqlite_e2e(sqlite_server: tuple[str, str]) -> Iterator[E2E]:
    base_url, url = sqlite_server
    db = Database.from_url(url)
    try:
        namespace = f"ns-{secrets.token_hex(6)}"
        create_namespace(db, namespace)
        token = create_token(db, namespace, [Permission.ADMIN])
    finally:
        db.dispose()
    env = E2E(base_url, token, namespace, Client(base_url, token, namespace))
    yield env
    env.close()
    assert_invariants(url, [namespace])  # the server's SQLite file is the module's


@pytest.fixture(autouse=True)
def _ends_with_weave_check(invariants_hold: None) -> None:
    """Every test of this family ends with ``weave check`` clean (tests/invariants.py)."""
