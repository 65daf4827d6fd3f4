"""Definition routes over HTTP, on MariaDB and on SQLite (``any_db``)."""

from __future__ import annotations

import re
from decimal import Decimal

import httpx
import pytest
from starlette.testclient import TestClient

from tests.http.conftest import Tenant, client_for
from tests.http.helpers import JSON_HEADERS, assert_problem, body, definition
from weave_core.engine import Engine
from weave_core.foundation.exactjson import content_hash, loads

RFC3339_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@pytest.fixture
def client(any_engine: Engine) -> TestClient:
    return client_for(any_engine)


def _publish(client: TestClient, tenant: Tenant, document: object) -> httpx.Response:
    return client.post(
        f"/v1/namespaces/{tenant.namespace}/definitions",
        content=body(document),
        headers={**JSON_HEADERS, **tenant.headers("publish")},
    )


def test_publish_201_then_identical_200(client: TestClient, tenant: Tenant) -> None:
    document = definition("greet", "1", name="world")
    first = _publish(client, tenant, document)
    assert first.status_code == 201, first.text
    assert first.headers["content-type"] == "application/json"
    published = loads(first.content)
    assert published["created"] is True
    assert published["definition_id"] == "greet" and published["version"] == "1"
    assert published["document"] == document
    assert published["content_hash"] == content_hash(document)
    assert RFC3339_UTC.match(published["published_at"])
    assert set(published) == {
        "definition_id", "version", "content_hash", "published_at", "created", "document",
    }

    again = _publish(client, tenant, document)
    assert again.status_code == 200
    repeat = loads(again.content)
    assert repeat["created"] is False
    assert repeat["published_at"] == published["published_at"]
    assert repeat["content_hash"] == published["content_hash"]


def test_publish_other_spelling_is_identical(client: TestClient, tenant: Tenant) -> None:
    raw = body(definition("n", "1", amount=Decimal("1.1")))
    assert b'"amount":1.1' in raw
    headers = {**JSON_HEADERS, **tenant.headers("publish")}
    url = f"/v1/namespaces/{tenant.namespace}/definitions"
    assert client.post(url, content=raw, headers=headers).status_code == 201
    # 1.10, 11E-1 and 1.1 are one number: the canonical content is equal, so this is a 200.
    for spelling in (b"1.10", b"11E-1", b"1.100000"):
        again = raw.replace(b'"amount":1.1', b'"amount":' + spelling)
        assert client.post(url, content=again, headers=headers).status_code == 200


def test_publish_conflict_409(client: TestClient, tenant: Tenant) -> None:
    assert _publish(client, tenant, definition("greet", "1", name="a")).status_code == 201
    response = _publish(client, tenant, definition("greet", "1", name="b"))
    problem = assert_problem(response, 409, "definition_version_conflict")
    assert problem["definition_id"] == "greet" and problem["version"] == "1"


def test_publish_invalid_422_lists_every_problem(client: TestClient, tenant: Tenant) -> None:
    document = definition("greet", "1")
    document["failure_policy"] = "SOMETIMES"
    document["deadline_seconds"] = -1
    document["surprise"] = True
    document["steps"][0]["kind"] = "teleport"
    response = _publish(client, tenant, document)
    problem = assert_problem(response, 422, "validation_failed")
    codes = {(p["path"], p["code"]) for p in problem["problems"]}
    assert ("$.failure_policy", "invalid_field") in codes
    assert ("$.deadline_seconds", "invalid_field") in codes
    assert ("$.surprise", "unknown_field") in codes
    assert any(code == "unknown_kind" for _, code in codes)
    for item in problem["problems"]:
        assert set(item) == {"path", "code", "message"}


@pytest.mark.parametrize("document", [[], "text", 1, None, True], ids=repr)
def test_publish_non_object_422(client: TestClient, tenant: Tenant, document: object) -> None:
    problem = assert_problem(_publish(client, tenant, document), 422, "validation_failed")
    assert problem["problems"][0]["path"] == "$"


def test_reads(client: TestClient, tenant: Tenant) -> None:
    base = f"/v1/namespaces/{tenant.namespace}/definitions"
    read = tenant.headers("read")
    assert loads(client.get(base, headers=read).content) == {"items": []}
    for definition_id, version in (("b-def", "1"), ("a-def", "1"), ("a-def", "2")):
        assert _publish(client, tenant, definition(definition_id, version)).status_code == 201

    listing = loads(client.get(base, headers=read).content)
    assert listing == {
        "items": [
            {"definition_id": "a-def", "latest_version": "2", "versions": 2},
            {"definition_id": "b-def", "latest_version": "1", "versions": 1},
        ]
    }

    one = client.get(f"{base}/a-def", headers=read)
    assert one.status_code == 200
    versions = loads(one.content)
    assert versions["definition_id"] == "a-def" and versions["latest_version"] == "2"
    assert [v["version"] for v in versions["items"]] == ["1", "2"]
    for item in versions["items"]:
        assert set(item) == {"version", "content_hash", "published_at"}
        assert RFC3339_UTC.match(item["published_at"])

    for version, expected in (("1", "1"), ("2", "2"), ("latest", "2")):
        response = client.get(f"{base}/a-def/versions/{version}", headers=read)
        assert response.status_code == 200
        record = loads(response.content)
        assert set(record) == {
            "definition_id", "version", "content_hash", "published_at", "document",
        }
        assert record["version"] == expected
        assert record["document"] == definition("a-def", expected)
        assert record["content_hash"] == content_hash(record["document"])


def test_read_404s(client: TestClient, tenant: Tenant) -> None:
    base = f"/v1/namespaces/{tenant.namespace}/definitions"
    read = tenant.headers("read")
    assert _publish(client, tenant, definition("there", "1")).status_code == 201
    assert_problem(client.get(f"{base}/missing", headers=read), 404, "not_found")
    assert_problem(client.get(f"{base}/missing/versions/1", headers=read), 404, "not_found")
    assert_problem(client.get(f"{base}/missing/versions/latest", headers=read), 404, "not_found")
    assert_problem(client.get(f"{base}/there/versions/9", headers=read), 404, "not_found")


def test_exact_numbers_round_trip(client: TestClient, tenant: Tenant) -> None:
    """1e400 and 2**64 are accepted where numbers are allowed and read back exactly."""
    raw = (
        b'{"schema_version":1,"definition_id":"exact","version":"1","steps":[{"id":"s",'
        b'"kind":"task","queue":"q","handler":{"name":"h","version":"1"},"input":{'
        b'"big":1e400,"huge":18446744073709551616,"tiny":1e-400,"precise":0.1000000000000000055511151231257827}}]}'
    )
    response = client.post(
        f"/v1/namespaces/{tenant.namespace}/definitions",
        content=raw,
        headers={**JSON_HEADERS, **tenant.headers("publish")},
    )
    assert response.status_code == 201, response.text
    assert b'"big":1E400' in response.content
    assert b'"huge":18446744073709551616' in response.content
    stored = client.get(
        f"/v1/namespaces/{tenant.namespace}/definitions/exact/versions/1",
        headers=tenant.headers("read"),
    )
    values = loads(stored.content)["document"]["steps"][0]["input"]
    assert values["big"] == Decimal("1e400")
    assert values["huge"] == 2**64 and isinstance(values["huge"], int)
    assert values["tiny"] == Decimal("1e-400")
    assert values["precise"] == Decimal("0.1000000000000000055511151231257827")
