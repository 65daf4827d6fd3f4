"""Unit tests of the clients' request building and answer parsing.

These use ``httpx.MockTransport`` stubs that answer what DESIGN.md §10 documents. They are
NOT evidence of the server's behaviour: ``test_client_live.py`` runs the same client
against the real server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import httpx
import pytest

from tests.sdk.design_example import build_external_job
from weave_sdk import (
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    Client,
    ConfigurationError,
    ConflictError,
    InvalidResponseError,
    NotFoundError,
    PermissionDeniedError,
    Problem,
    RateLimitedError,
    ServerError,
    ValidationError,
    WeaveAPIError,
    WeaveConnectionError,
    dumps,
    loads,
)

PUBLISHED = {
    "definition_id": "external-job",
    "version": "1",
    "content_hash": "ab" * 32,
    "published_at": "2025-01-02T03:04:05.123456Z",
    "created": True,
    "document": {"price": Decimal("1.10")},
}
Handler = Callable[[httpx.Request], httpx.Response]


def answer(status: int, body: Any, content_type: str = "application/json") -> httpx.Response:
    text = body if isinstance(body, str | bytes) else dumps(body)
    return httpx.Response(status, content=text, headers={"content-type": content_type})


def problem(status: int, code: str, detail: str, **extra: Any) -> httpx.Response:
    body = {"type": "about:blank", "title": "T", "status": status, "code": code, "detail": detail}
    return answer(status, {**body, **extra}, "application/problem+json")


def stub_client(handler: Handler, **kwargs: Any) -> Client:
    options = {"base_url": "http://weave.test", "token": "tok", "namespace": "ns 1", **kwargs}
    return Client(**options, transport=httpx.MockTransport(handler))


def test_unit_publish_request_is_exact_json_with_auth() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer(201, {**PUBLISHED, "document": {"price": Decimal("1.10")}})

    wf = build_external_job()
    wf.task(
        "extra",
        queue="q",
        handler=build_external_job().steps[0].handler,  # type: ignore[attr-defined]  # a TaskStep
        input={"price": Decimal("1.10"), "big": 9007199254740993},
    )
    with stub_client(handler) as client:
        result = client.publish(wf)
    request = seen[0]
    assert request.method == "POST"
    assert request.url.raw_path == b"/v1/namespaces/ns%201/definitions"
    assert request.headers["authorization"] == "Bearer tok"
    assert request.headers["content-type"] == "application/json"
    assert b'"price":1.10' in request.content
    assert b'"big":9007199254740993' in request.content
    assert loads(request.content) == wf.to_json()
    assert result.created is True
    assert result.document == {"price": Decimal("1.10")}
    assert result.published_at.microsecond == 123456


def test_unit_publish_accepts_a_plain_document() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return answer(200, {**PUBLISHED, "created": False})

    with stub_client(handler) as client:
        result = client.publish(build_external_job().to_json())
    assert result.created is False


def test_unit_read_routes() -> None:
    paths: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.raw_path)
        if request.url.path.endswith("/versions/latest"):
            return answer(200, {k: v for k, v in PUBLISHED.items() if k != "created"})
        if request.url.path.endswith("/definitions"):
            items = [{"definition_id": "external-job", "latest_version": "2", "versions": 2}]
            return answer(200, {"items": items})
        if request.url.path.endswith("/definitions/a%2Fb") or "a/b" in request.url.path:
            items = [{"version": "1", "content_hash": "c", "published_at": "2025-01-01T00:00:00Z"}]
            return answer(200, {"items": items})
        if request.url.path == "/v1/health":
            return answer(200, {"status": "ok"})
        return problem(404, "not_found", "no")

    with stub_client(handler) as client:
        version = client.get_definition("external-job")
        assert version.document == {"price": Decimal("1.10")}
        assert [d.latest_version for d in client.list_definitions()] == ["2"]
        assert [v.version for v in client.list_versions("a/b")] == ["1"]
        assert client.health().ok is True
    assert paths == [
        b"/v1/namespaces/ns%201/definitions/external-job/versions/latest",
        b"/v1/namespaces/ns%201/definitions",
        b"/v1/namespaces/ns%201/definitions/a%2Fb",
        b"/v1/health",
    ]


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (409, ConflictError),
        (413, BadRequestError),
        (418, WeaveAPIError),
        (500, ServerError),
        (503, ServerError),
    ],
)
def test_unit_problem_statuses_map_to_typed_errors(status: int, cls: type[WeaveAPIError]) -> None:
    with stub_client(lambda _: problem(status, "some_code", "because", extra=1)) as client:
        with pytest.raises(cls) as info:
            client.get_definition("x", "1")
    error = info.value
    assert type(error) is cls
    assert (error.status, error.code, error.detail) == (status, "some_code", "because")
    assert error.problem["extra"] == 1
    assert error.title == "T"


def test_unit_validation_error_carries_problems() -> None:
    problems = [{"path": "$.steps[0].id", "code": "invalid_id", "message": "bad id"}]
    response = problem(422, "validation_failed", "2 problems", problems=problems)
    with stub_client(lambda _: response) as client, pytest.raises(ValidationError) as info:
        client.publish({"schema_version": 1})
    assert info.value.problems == [Problem("$.steps[0].id", "invalid_id", "bad id")]


def test_unit_rate_limit_keeps_retry_after() -> None:
    def handler(_: httpx.Request) -> httpx.Response:
        response = problem(429, "rate_limited", "slow down")
        response.headers["retry-after"] = "7"
        return response

    with stub_client(handler) as client, pytest.raises(RateLimitedError) as info:
        client.list_definitions()
    assert info.value.retry_after == 7


def test_unit_error_without_problem_body() -> None:
    with stub_client(lambda _: answer(502, "<html>bad gateway</html>", "text/html")) as client:
        with pytest.raises(ServerError) as info:
            client.list_definitions()
    assert info.value.code == "http_502"
    assert info.value.detail == "Bad Gateway"


@pytest.mark.parametrize(
    "body",
    [
        '{"items": [], "items": []}',
        '{"items": NaN}',
        "not json",
        '{"things": []}',
        '{"items": [{"definition_id": 1}]}',
    ],
)
def test_unit_malformed_answers_are_refused(body: str) -> None:
    with stub_client(lambda _: answer(200, body)) as client:
        with pytest.raises(InvalidResponseError):
            client.list_definitions()


def test_unit_health_503_is_an_answer_not_an_error() -> None:
    with stub_client(lambda _: answer(503, {"status": "degraded"}), token=None) as client:
        health = client.health()
    assert (health.ok, health.status_code, health.body) == (False, 503, {"status": "degraded"})


def test_unit_connection_failures_are_wrapped() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with stub_client(handler) as client, pytest.raises(WeaveConnectionError) as info:
        client.health()
    assert isinstance(info.value.__cause__, httpx.ConnectError)


def test_unit_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEAVE_URL", "http://env.test/")
    monkeypatch.setenv("WEAVE_TOKEN", "env-token")
    monkeypatch.setenv("WEAVE_NAMESPACE", "env-ns")
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer(200, {"items": []})

    with Client(transport=httpx.MockTransport(handler)) as client:
        assert client.namespace == "env-ns"
        assert client.list_definitions() == []
    assert str(seen[0].url) == "http://env.test/v1/namespaces/env-ns/definitions"
    assert seen[0].headers["authorization"] == "Bearer env-token"


def test_unit_missing_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("WEAVE_URL", "WEAVE_TOKEN", "WEAVE_NAMESPACE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigurationError, match="WEAVE_URL"):
        Client()
    with pytest.raises(ConfigurationError, match="http"):
        Client("weave.test")
    with Client("http://weave.test") as client:
        with pytest.raises(ConfigurationError, match="namespace"):
            client.list_definitions()


def test_unit_async_client_shares_the_same_calls() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "POST":
            return problem(409, "definition_version_conflict", "other content")
        return answer(200, {"items": []})

    async def scenario() -> None:
        async with AsyncClient(
            "http://weave.test", "tok", "ns", transport=httpx.MockTransport(handler)
        ) as client:
            assert await client.list_definitions() == []
            with pytest.raises(ConflictError) as info:
                await client.publish(build_external_job())
            assert info.value.code == "definition_version_conflict"

    asyncio.run(scenario())
    assert [r.method for r in seen] == ["GET", "POST"]
    assert loads(seen[1].content) == build_external_job().to_json()
