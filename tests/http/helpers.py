"""Helpers of the HTTP tests: definition documents, problem assertions, a raw ASGI caller."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
from starlette.types import ASGIApp, Message

from weave_core.foundation import exactjson

PROBLEM = "application/problem+json"


def definition(
    definition_id: str = "greet", version: str = "1", **task_input: Any
) -> dict[str, Any]:
    """A small valid definition: one task step whose input template holds ``task_input``."""
    return {
        "schema_version": 1,
        "definition_id": definition_id,
        "version": version,
        "failure_policy": "REVIEW",
        "steps": [
            {
                "id": "hello",
                "kind": "task",
                "queue": "greetings",
                "handler": {"name": "hello", "version": "1"},
                "input": task_input,
            }
        ],
    }


def body(document: Any) -> bytes:
    return exactjson.dumps(document).encode("utf-8")


JSON_HEADERS = {"Content-Type": "application/json"}


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The response is a problem+json of ``status`` with ``code``; returns the body."""
    assert response.status_code == status, (response.status_code, response.text[:500])
    assert response.headers["content-type"].split(";")[0] == PROBLEM, response.headers
    problem = exactjson.loads(response.content)
    assert problem["code"] == code, problem
    assert problem["status"] == status
    assert problem["type"] == f"https://weave.dev/problems/{code}"
    assert isinstance(problem["title"], str) and isinstance(problem["detail"], str)
    return dict(problem)


def assert_safe(response: httpx.Response) -> None:
    """Never a 5xx; every error is problem+json with a code."""
    assert response.status_code < 500, (response.status_code, response.text[:500])
    if response.status_code >= 400:
        assert response.headers["content-type"].split(";")[0] == PROBLEM
        assert "code" in exactjson.loads(response.content)


@dataclass
class AsgiResult:
    status: int
    headers: dict[str, str]
    body: bytes
    chunks_consumed: int
    bytes_consumed: int
    messages: list[Message] = field(default_factory=list)

    def json(self) -> Any:
        return exactjson.loads(self.body)


def call_asgi(
    app: ASGIApp,
    method: str,
    path: str,
    headers: Mapping[str, str],
    chunks: Iterator[bytes],
    *,
    disconnect: bool = False,
) -> AsgiResult:
    """Call ``app`` directly, feeding the body from ``chunks`` one ``receive()`` at a time.

    Records how many chunks (and bytes) the app actually pulled, which a TestClient cannot
    show (it reads a streamed request body completely before the app runs). With
    ``disconnect`` the client goes away when the chunks run out instead of ending the body.
    """
    consumed = {"chunks": 0, "bytes": 0}
    sent: list[Message] = []
    exhausted = False

    async def receive() -> Message:
        nonlocal exhausted
        if exhausted:
            return {"type": "http.disconnect"}
        try:
            chunk = next(chunks)
        except StopIteration:
            exhausted = True
            if disconnect:
                return {"type": "http.disconnect"}
            return {"type": "http.request", "body": b"", "more_body": False}
        consumed["chunks"] += 1
        consumed["bytes"] += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
        "state": {},
    }

    async def run() -> None:
        await app(scope, receive, send)

    anyio.run(run)
    start = next(m for m in sent if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return AsgiResult(
        status=start["status"],
        headers={k.decode(): v.decode() for k, v in start["headers"]},
        body=content,
        chunks_consumed=consumed["chunks"],
        bytes_consumed=consumed["bytes"],
        messages=sent,
    )
