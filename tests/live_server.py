"""A real ``weave serve`` for tests: a subprocess on 127.0.0.1 and a free port.

``weave_server_process`` runs one server per session on the session MariaDB database;
``weave_server`` gives each test a fresh namespace and an admin token on it, as a
``LiveServer`` that unpacks as ``(base_url, admin_token, namespace)``. Both fixtures are
exposed to every test package by ``tests/conftest.py``.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from weave_core.access.identity import Permission, create_namespace, create_token
from weave_core.storage.db import Database

SERVER_START_TIMEOUT_S = 30.0
_LISTEN_LINE = re.compile(r"listening on (http://\S+)")


def weave_command(*args: str) -> list[str]:
    """The ``weave`` console script of this environment (falls back to the module)."""
    script = Path(sys.executable).with_name("weave")
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-c", "import sys; from weave_http.cli import main; "
            "sys.exit(main())", *args]


@dataclass
class ServerProcess:
    process: subprocess.Popen[str]
    base_url: str
    database_url: str
    output: list[str]
    reader: threading.Thread

    def stop(self) -> None:
        """SIGTERM (a graceful stop), then SIGKILL after 10 s; releases the pipe."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.reader.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_server(
    database_url: str, *extra: str, env: dict[str, str] | None = None
) -> ServerProcess:
    """Run ``weave serve --port 0`` and wait until it listens and answers /v1/health."""
    process = subprocess.Popen(
        weave_command("serve", "--host", "127.0.0.1", "--port", "0",
                      "--database-url", database_url, "--log-level", "warning", *extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert process.stdout is not None
    output: list[str] = []
    found: list[str] = []
    ready = threading.Event()

    def pump() -> None:  # keeps reading so the server never blocks on a full pipe
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            match = _LISTEN_LINE.search(line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
        ready.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    if not ready.wait(SERVER_START_TIMEOUT_S) or not found:
        ServerProcess(process, "", database_url, output, reader).stop()
        raise RuntimeError("weave serve did not start:\n" + "".join(output))
    server = ServerProcess(process, found[0], database_url, output, reader)
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while True:
        try:
            if httpx.get(f"{server.base_url}/v1/health", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            server.stop()
            raise RuntimeError("weave serve is not healthy:\n" + "".join(output))
        time.sleep(0.05)


@pytest.fixture(scope="session")
def live_database() -> Iterator[tuple[str, Database]]:
    """The live server's own database, (url, Database), for the whole session.

    Never the shared session database: the server runs its tick, which would consume or
    quarantine inbox rows and pending advances that other tests create and inspect. (And a
    session-scoped server must not depend on ``mysql_url``, which directories override.)
    """
    from tests.conftest import create_mysql_database, drop_mysql_database
    from weave_core.storage.migrate import upgrade

    url = create_mysql_database("weave_live")
    upgrade(url)
    db = Database.from_url(url)
    yield url, db
    db.dispose()
    drop_mysql_database(url)


@pytest.fixture(scope="session")
def weave_server_process(live_database: tuple[str, Database]) -> Iterator[ServerProcess]:
    """One real ``weave serve`` (with its tick) on the live database for the whole session."""
    server = start_server(live_database[0])
    yield server
    server.stop()


@dataclass(frozen=True)
class LiveServer:
    """A running server and a fresh namespace; unpacks as (base_url, token, namespace)."""

    base_url: str
    token: str
    namespace: str
    db: Database
    """The server's database (for tests that look at rows it wrote)."""

    def __iter__(self) -> Iterator[str]:
        return iter((self.base_url, self.token, self.namespace))

    def token_with(self, *permissions: Permission | str) -> str:
        """Another token of this namespace with exactly ``permissions``."""
        return create_token(self.db, self.namespace, list(permissions))


@pytest.fixture
def weave_server(
    weave_server_process: ServerProcess, live_database: tuple[str, Database]
) -> LiveServer:
    """(base_url, admin token, namespace) of a real server, with a namespace of this test."""
    db = live_database[1]
    namespace = f"ns-{secrets.token_hex(6)}"
    create_namespace(db, namespace)
    token = create_token(db, namespace, [Permission.ADMIN])
    return LiveServer(weave_server_process.base_url, token, namespace, db)
