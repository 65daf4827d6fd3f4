"""T11 regressions of a hostile-input sweep (#12 item 10): query values, paths, the document.

Each case once answered a 500, a misread value or a redirect built from the client's Host
header; each must be a 4xx problem with a stable code.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from tests.http.conftest import Tenant, client_for
from tests.http.helpers import assert_problem
from tests.live_server import LiveServer
from weave_core.engine import Engine
from weave_core.foundation.exactjson import loads
from weave_http.app import create_app
from weave_http.routes import QUERY_READ_KEY, all_api_routes

BAD_QUERIES = {
    "limit_superscript_two": ("workflows", "limit=%C2%B2", "limit"),
    "limit_arabic_indic_12": ("workflows", "limit=%D9%A1%D9%A2", "limit"),
    "limit_fullwidth_digit": ("workflows", "limit=%EF%BC%95", "limit"),
    "limit_ten_digits": ("workflows", "limit=1234567890", "limit"),
    "history_after_superscript": ("history", "after=%C2%B2", "after"),
    "history_limit_arabic_indic": ("history", "limit=%D9%A1", "limit"),
    "created_after_overflow": ("workflows", "created_after=0001-01-01T00:00:00%2B14:00",
                               "created_after"),
    "created_before_overflow": ("workflows", "created_before=9999-12-31T23:59:59-14:00",
                                "created_before"),
    "created_after_not_a_time": ("workflows", "created_after=yesterday", "created_after"),
}


def _path(tenant: Tenant, target: str) -> str:
    base = f"/v1/namespaces/{tenant.namespace}/workflows"
    return base if target == "workflows" else base + "/wf-none/history"


@pytest.mark.parametrize("case", list(BAD_QUERIES.values()), ids=list(BAD_QUERIES))
def test_hostile_query_values_are_422(any_engine: Engine, tenant: Tenant,
                                      case: tuple[str, str, str]) -> None:
    target, query, name = case
    response = client_for(any_engine).get(f"{_path(tenant, target)}?{query}",
                                          headers=tenant.headers("read"))
    problem = assert_problem(response, 422, "validation_failed")
    assert [(p["path"], p["code"]) for p in problem["problems"]] == [(f"$.{name}",
                                                                      "invalid_query")]


def test_extreme_but_valid_times_are_accepted(any_engine: Engine, tenant: Tenant) -> None:
    client = client_for(any_engine)
    url = _path(tenant, "workflows")
    for query in ("created_after=0001-01-01T00:00:00Z", "created_before=9999-12-31T23:59:59Z",
                  "created_after=0001-01-01T14:00:00%2B14:00", "limit=0012"):
        response = client.get(f"{url}?{query}", headers=tenant.headers("read"))
        assert response.status_code == 200, (query, response.text)
        assert loads(response.content)["items"] == []


@pytest.mark.parametrize("path", ["/v1/namespaces/{ns}/workflows/", "/v1/health/",
                                  "/v1/namespaces/{ns}/definitions/", "/openapi.json/"])
def test_trailing_slash_is_404_without_a_redirect(mysql_engine: Engine, mysql_tenant: Tenant,
                                                  path: str) -> None:
    client = TestClient(create_app(mysql_engine), follow_redirects=False)
    url = path.format(ns=mysql_tenant.namespace)
    for headers in ({"Host": "evil.example"}, mysql_tenant.headers("admin")):
        response = client.get(url, headers=headers)
        assert_problem(response, 404, "route_not_found")
        assert "location" not in response.headers


def test_console_root_redirect_is_relative(mysql_engine: Engine) -> None:
    client = TestClient(create_app(mysql_engine), follow_redirects=False)
    response = client.get("/ui", headers={"Host": "evil.example"})
    assert response.status_code == 307
    assert response.headers["location"] == "/ui/"


def _recording(app: Callable[[Scope, Receive, Send], Awaitable[None]],
               reads: list[set[str]]) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    async def wrapper(scope: Scope, receive: Receive, send: Send) -> None:
        await app(scope, receive, send)
        reads.append(set(scope.get(QUERY_READ_KEY, set())))

    return wrapper


def test_openapi_declares_every_query_parameter_a_route_reads(mysql_engine: Engine,
                                                              mysql_tenant: Tenant) -> None:
    """Each GET operation is called; the names its endpoint read are exactly the query
    parameters the document declares for it (reading an undeclared one is a 500)."""
    document = loads(client_for(mysql_engine).get("/openapi.json").content)
    values = {"ns": mysql_tenant.namespace, "definition_id": "d", "version": "1",
              "queue": "q", "task_id": "t-none", "workflow_id": "wf-none"}
    headers = mysql_tenant.headers("admin")
    checked = 0
    for route in all_api_routes():
        if route.method != "GET":
            continue
        reads: list[set[str]] = []
        client = TestClient(_recording(create_app(mysql_engine), reads))
        response = client.get(route.path.format(**values), headers=headers)
        assert response.status_code < 500, (route.path, response.text)
        operation: dict[str, Any] = document["paths"][route.path]["get"]
        declared = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
        assert reads == [declared], (route.path, reads, declared)
        checked += 1
    assert checked >= 10
    listed = document["paths"]["/v1/namespaces/{ns}/workflows"]["get"]["parameters"]
    assert {p["name"] for p in listed if p["in"] == "query"} == {
        "status", "definition_id", "version", "paused", "created_after", "created_before",
        "idempotency_key", "operation_type", "cursor", "limit"}


@pytest.mark.parametrize("value", [b"abc", b"-1", b"1, 2"])
def test_malformed_content_length_on_the_real_server(weave_server: LiveServer,
                                                     value: bytes) -> None:
    """The HTTP server's own parser refuses these before the app runs: a plain 400 (the
    documented exception in docs/http-api.md), never a 5xx, and the connection closes."""
    url = urlsplit(weave_server.base_url)
    assert url.hostname is not None and url.port is not None
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        sock.sendall(b"POST /v1/namespaces/x/definitions HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nContent-Length: " + value
                     + b"\r\n\r\n{}")
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    status_line = answer.split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.1 400"), answer[:300]
