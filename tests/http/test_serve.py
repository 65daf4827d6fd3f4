"""``weave serve`` as a real process: migration policy, startup line, and a smoke test."""

from __future__ import annotations

import select
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from tests.http.helpers import JSON_HEADERS, assert_problem, body, definition
from tests.live_server import LiveServer, ServerProcess, start_server, weave_command
from weave_core.access.identity import Permission, create_namespace, create_token
from weave_core.foundation.exactjson import loads
from weave_core.storage.db import Database

SMALL_LIMIT = 64 * 1024


def test_serve_refuses_an_unmigrated_mysql_database(empty_mysql_url: str) -> None:
    result = subprocess.run(
        weave_command("serve", "--port", "0", "--database-url", empty_mysql_url),
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 1, result
    assert "error[database_not_migrated]" in result.stderr
    assert "--migrate" in result.stderr and "weave migrate" in result.stderr
    assert "listening" not in result.stdout


def test_serve_migrates_mysql_with_the_flag(empty_mysql_url: str) -> None:
    server = start_server(empty_mysql_url, "--migrate", "--node-id", "node-a")
    try:
        health = loads(httpx.get(f"{server.base_url}/v1/health").content)
        assert health["dialect"] == "mysql" and health["node_id"] == "node-a"
    finally:
        server.stop()
    # uvicorn shuts down gracefully on SIGTERM, then re-raises the signal (exit by SIGTERM).
    assert server.process.returncode in (0, -signal.SIGTERM)
    # Now migrated: a second server starts without --migrate.
    again = start_server(empty_mysql_url)
    again.stop()


def test_serve_migrates_sqlite_automatically(tmp_path: object) -> None:
    server = start_server(f"sqlite:///{tmp_path}/weave.db")
    try:
        health = loads(httpx.get(f"{server.base_url}/v1/health").content)
        assert health["dialect"] == "sqlite"
    finally:
        server.stop()
    [line] = [line for line in server.output if "listening on" in line]
    assert line.startswith("weave serve: listening on http://127.0.0.1:")
    assert "sqlite:///" in line


def test_serve_reports_a_busy_port(tmp_path: object) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            weave_command("serve", "--port", str(port),
                          "--database-url", f"sqlite:///{tmp_path}/weave.db"),
            capture_output=True, text=True, timeout=60,
        )
    assert result.returncode == 1
    assert "error[address_unavailable]" in result.stderr


def test_smoke_publish_and_read_over_a_real_server(weave_server: LiveServer) -> None:
    base_url, token, namespace = weave_server
    auth = {"Authorization": f"Bearer {token}"}
    url = f"{base_url}/v1/namespaces/{namespace}/definitions"
    with httpx.Client(timeout=10) as client:
        created = client.post(url, content=body(definition("smoke", "1", n=2**64)),
                              headers={**JSON_HEADERS, **auth})
        assert created.status_code == 201, created.text
        assert client.post(url, content=body(definition("smoke", "1", n=2**64)),
                           headers={**JSON_HEADERS, **auth}).status_code == 200
        latest = client.get(f"{url}/smoke/versions/latest", headers=auth)
        assert loads(latest.content)["document"]["steps"][0]["input"]["n"] == 2**64
        assert_problem(client.get(url), 401, "unauthenticated")
        assert_problem(client.get(f"{base_url}/nowhere"), 404, "route_not_found")
        reader = weave_server.token_with(Permission.READ)
        assert_problem(
            client.post(url, content=body(definition("smoke", "2")),
                        headers={**JSON_HEADERS, "Authorization": f"Bearer {reader}"}),
            403, "permission_denied",
        )
        assert client.get(f"{base_url}/openapi.json").status_code == 200


@pytest.fixture
def small_server(mysql_url: str) -> Iterator[ServerProcess]:
    server = start_server(
        mysql_url, "--no-tick", env={"WEAVE_LIMIT_MAX_BODY_BYTES": str(SMALL_LIMIT)}
    )
    yield server
    server.stop()


def _tenant_token(db: Database) -> tuple[str, str]:
    namespace = f"ns-{int(time.time() * 1e6):x}"
    create_namespace(db, namespace)
    return namespace, create_token(db, namespace, [Permission.PUBLISH])


def _read_response(sock: socket.socket) -> bytes:
    data = b""
    sock.settimeout(10)
    try:
        while b"\r\n\r\n" not in data:
            part = sock.recv(65536)
            if not part:
                break
            data += part
    except (ConnectionResetError, TimeoutError):
        pass
    return data


def test_real_server_refuses_a_streamed_body_early(
    small_server: ServerProcess, mysql_db: Database
) -> None:
    """A chunked upload with no end: the server answers 413 soon after the limit."""
    namespace, token = _tenant_token(mysql_db)
    parts = urlsplit(small_server.base_url)
    sock = socket.create_connection((parts.hostname, parts.port))
    sock.settimeout(5)
    sock.sendall(
        f"POST /v1/namespaces/{namespace}/definitions HTTP/1.1\r\nHost: test\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n".encode()
    )
    chunk = b"a" * 4096
    frame = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    sent = 0
    budget = 64 * SMALL_LIMIT
    try:
        while sent < budget:
            readable, _, _ = select.select([sock], [], [], 0.002)
            if readable:
                break
            sock.sendall(frame)
            sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError, TimeoutError):
        pass
    response = _read_response(sock)
    sock.close()
    assert response.startswith(b"HTTP/1.1 413"), response[:200]
    assert b"application/problem+json" in response
    # Typically 68 KiB were sent; allow scheduling slack, not buffering of the whole body.
    assert sent < 8 * SMALL_LIMIT, f"the server read {sent} bytes past a {SMALL_LIMIT} limit"


def test_real_server_refuses_a_large_content_length_without_the_body(
    small_server: ServerProcess, mysql_db: Database
) -> None:
    namespace, token = _tenant_token(mysql_db)
    parts = urlsplit(small_server.base_url)
    with socket.create_connection((parts.hostname, parts.port)) as sock:
        sock.sendall(
            f"POST /v1/namespaces/{namespace}/definitions HTTP/1.1\r\nHost: test\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {10**12}\r\n\r\n".encode()
        )
        response = _read_response(sock)  # no body byte was sent
    assert response.startswith(b"HTTP/1.1 413"), response[:200]


def test_serve_runs_several_engine_processes_on_one_port(empty_mysql_url: str) -> None:
    server = start_server(empty_mysql_url, "--migrate", "--workers", "2", "--node-id", "multi")
    try:
        nodes: set[str] = set()
        for _ in range(400):  # a new connection each time: the kernel picks an acceptor
            health = loads(httpx.get(f"{server.base_url}/v1/health").content)
            nodes.add(health["node_id"])
            if len(nodes) == 2:
                break
        assert len(nodes) == 2 and all(n.startswith("multi-") for n in nodes), nodes
    finally:
        server.stop()
    [line] = [line for line in server.output if "listening on" in line]
    assert "2 engine processes" in line


def test_serve_refuses_a_bad_worker_count(tmp_path: object) -> None:
    result = subprocess.run(weave_command("serve", "--workers", "0"), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2 and "a whole number from 1 to 64" in result.stderr
    on_sqlite = subprocess.run(
        weave_command("serve", "--workers", "2", "--database-url",
                      f"sqlite:///{tmp_path}/weave.db"),
        capture_output=True, text=True, timeout=60)
    assert on_sqlite.returncode == 2 and "error[invalid_option]" in on_sqlite.stderr
    assert "Traceback" not in on_sqlite.stderr
