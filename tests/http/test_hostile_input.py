"""T11: hostile input gets a 4xx problem with a code, never a 500 (limits, JSON, media type)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace

import pytest
from starlette.testclient import TestClient

from tests.http.conftest import Tenant, client_for, make_engine
from tests.http.helpers import (
    assert_problem,
    assert_safe,
    body,
    call_asgi,
    definition,
)
from weave_core.engine import Engine
from weave_core.foundation.exactjson import loads
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database
from weave_http.app import create_app

SMALL_LIMIT = 64 * 1024
CHUNK = 16 * 1024


@pytest.fixture
def engine(mysql_db: Database, plugin_host: PluginHost) -> Engine:
    return make_engine(mysql_db, plugin_host)


@pytest.fixture
def small_engine(mysql_db: Database, plugin_host: PluginHost) -> Engine:
    return make_engine(mysql_db, plugin_host, replace(Limits(), max_body_bytes=SMALL_LIMIT))


def _url(tenant: Tenant) -> str:
    return f"/v1/namespaces/{tenant.namespace}/definitions"


def _headers(tenant: Tenant, content_type: str | None = "application/json") -> dict[str, str]:
    headers = dict(tenant.headers("publish"))
    if content_type is not None:
        headers["Content-Type"] = content_type
    return headers


def _with_input(raw_value: bytes) -> bytes:
    """A valid definition whose task input holds ``raw_value`` spelled exactly as given."""
    template = body(definition("hostile", "1", x=0))
    return template.replace(b'"x":0', b'"x":' + raw_value)


# --- JSON --------------------------------------------------------------------------

DEPTH_65 = b"[" * 65 + b"]" * 65
BAD_JSON = {
    "nan": _with_input(b"NaN"),
    "infinity": _with_input(b"Infinity"),
    "minus_infinity": _with_input(b"-Infinity"),
    "duplicate_top_key": b'{"version":"1","version":"2"}',
    "duplicate_nested_key": _with_input(b'{"a":1,"a":1}'),
    "invalid_utf8": _with_input(b'"\xff\xfe"'),
    "overlong_utf8": _with_input(b'"\xc0\xaf"'),
    "raw_surrogate_utf8": _with_input(b'"\xed\xa0\x80"'),
    "escaped_lone_surrogate": _with_input(b'"\\ud800"'),
    "escaped_lone_low_surrogate_key": _with_input(b'{"\\udc00":1}'),
    "byte_order_mark": b"\xef\xbb\xbf" + body(definition()),
    "int_over_4300_digits": _with_input(b"1" * 5000),
    "trailing_garbage": body(definition()) + b"}",
    "two_documents": body(definition()) + body(definition()),
    "syntax": b'{"schema_version": 1,',
    "single_quotes": b"{'a': 1}",
    "empty": b"",
    "whitespace_only": b"   \n",
    "nul_byte": b"\x00",
}


@pytest.mark.parametrize("raw", list(BAD_JSON.values()), ids=list(BAD_JSON))
def test_bad_json_is_400(engine: Engine, mysql_tenant: Tenant, raw: bytes) -> None:
    response = client_for(engine).post(_url(mysql_tenant), content=raw,
                                       headers=_headers(mysql_tenant))
    assert_problem(response, 400, "invalid_json")


@pytest.mark.parametrize(
    "raw",
    [DEPTH_65, _with_input(b"[" * 70 + b"]" * 70), b"[" * 200_000, b'{"a":' * 100_000],
    ids=["array_65", "input_70", "open_200k", "objects_100k"],
)
def test_too_deep_is_400(engine: Engine, mysql_tenant: Tenant, raw: bytes) -> None:
    response = client_for(engine).post(_url(mysql_tenant), content=raw,
                                       headers=_headers(mysql_tenant))
    problem = assert_problem(response, 400, "json_too_deep")
    assert problem["max_depth"] == engine.limits.max_json_depth


EXACT_NUMBERS = [b"1e400", b"18446744073709551616", b"-1e-400", b"1E999999999",
                 b"0.30000000000000000000000000001", b"-0", b"1" * 4000]


@pytest.mark.parametrize("raw", EXACT_NUMBERS, ids=[n.decode()[:20] for n in EXACT_NUMBERS])
def test_exact_numbers_accepted(engine: Engine, mysql_tenant: Tenant, raw: bytes) -> None:
    client = client_for(engine)
    response = client.post(_url(mysql_tenant), content=_with_input(raw),
                           headers=_headers(mysql_tenant))
    assert response.status_code == 201, response.text
    stored = client.get(f"{_url(mysql_tenant)}/hostile/versions/1",
                        headers=mysql_tenant.headers("read"))
    assert stored.status_code == 200
    assert loads(stored.content)["document"]["steps"][0]["input"]["x"] == loads(raw)


# --- media type --------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
     "application/json; charset=latin-1", "application/jsonx", "application/ld+json", ""],
)
def test_wrong_content_type_is_415(
    engine: Engine, mysql_tenant: Tenant, content_type: str | None
) -> None:
    response = client_for(engine).post(
        _url(mysql_tenant), content=body(definition()), headers=_headers(mysql_tenant, content_type)
    )
    assert_problem(response, 415, "unsupported_media_type")


@pytest.mark.parametrize(
    "content_type", ["application/json", "Application/JSON", "application/json; charset=utf-8",
                     'application/json;charset="UTF-8"'],
)
def test_json_content_types_accepted(
    engine: Engine, mysql_tenant: Tenant, content_type: str
) -> None:
    response = client_for(engine).post(
        _url(mysql_tenant), content=body(definition()), headers=_headers(mysql_tenant, content_type)
    )
    assert response.status_code in (200, 201), response.text


# --- odd documents: 422 with problems, never 500 -------------------------------------

ODD_DOCUMENTS: dict[str, object] = {
    "empty_object": {},
    "steps_string": {**definition(), "steps": "all of them"},
    "steps_empty": {**definition(), "steps": []},
    "steps_of_numbers": {**definition(), "steps": [1, 2, 3]},
    "version_number": {**definition(), "version": 1},
    "schema_version_2": {**definition(), "schema_version": 2},
    "schema_version_string": {**definition(), "schema_version": "1"},
    "id_huge": {**definition(), "definition_id": "x" * 100_000},
    "id_nul": {**definition(), "definition_id": "a\u0000b"},
    "id_unicode": {**definition(), "definition_id": "d\u00e9finition\U0001f600"},
    "version_latest": {**definition(), "version": "latest"},
    "id_path_chars": {**definition(), "definition_id": "../../etc/passwd"},
    "step_null": {**definition(), "steps": [None]},
    "input_schema_list": {**definition(), "input_schema": [1]},
    "limits_huge": {**definition(), "limits": {"max_steps": 10**30}},
}


@pytest.mark.parametrize("document", list(ODD_DOCUMENTS.values()), ids=list(ODD_DOCUMENTS))
def test_odd_documents_are_422(engine: Engine, mysql_tenant: Tenant, document: object) -> None:
    response = client_for(engine).post(_url(mysql_tenant), content=body(document),
                                       headers=_headers(mysql_tenant))
    problem = assert_problem(response, 422, "validation_failed")
    assert problem["problems"], problem


# --- body size ---------------------------------------------------------------------


def test_body_over_limit_with_content_length_is_413(engine: Engine, mysql_tenant: Tenant) -> None:
    limit = engine.limits.max_body_bytes
    response = client_for(engine).post(_url(mysql_tenant), content=b" " * (limit + 1),
                                       headers=_headers(mysql_tenant))
    problem = assert_problem(response, 413, "payload_too_large")
    assert problem["limit_bytes"] == limit


def test_body_exactly_at_limit_is_read(small_engine: Engine, mysql_tenant: Tenant) -> None:
    document = body(definition("edge", "1"))
    padded = document + b" " * (SMALL_LIMIT - len(document))
    client = client_for(small_engine)
    response = client.post(_url(mysql_tenant), content=padded, headers=_headers(mysql_tenant))
    assert response.status_code == 201, response.text
    response = client.post(_url(mysql_tenant), content=padded + b" ",
                           headers=_headers(mysql_tenant))
    assert_problem(response, 413, "payload_too_large")


def _endless() -> Iterator[bytes]:
    yield b'{"padding": "'
    yield from itertools.repeat(b"a" * CHUNK)


def test_content_length_over_limit_refused_before_reading(
    small_engine: Engine, mysql_tenant: Tenant
) -> None:
    headers = {**_headers(mysql_tenant), "Content-Length": str(10**12)}
    result = call_asgi(create_app(small_engine), "POST", _url(mysql_tenant), headers, _endless())
    assert result.status == 413
    assert result.json()["code"] == "payload_too_large"
    assert result.chunks_consumed == 0  # refused on the header alone


def test_streamed_body_refused_as_soon_as_it_passes_the_limit(
    small_engine: Engine, mysql_tenant: Tenant
) -> None:
    """No Content-Length (chunked): the app stops pulling right after the limit."""
    result = call_asgi(create_app(small_engine), "POST", _url(mysql_tenant),
                       _headers(mysql_tenant), _endless())
    assert result.status == 413
    assert result.json()["code"] == "payload_too_large"
    assert result.headers["content-type"] == "application/problem+json"
    assert result.bytes_consumed <= SMALL_LIMIT + CHUNK + 64
    assert result.chunks_consumed <= SMALL_LIMIT // CHUNK + 2


def test_lying_content_length_is_caught_while_streaming(
    small_engine: Engine, mysql_tenant: Tenant
) -> None:
    headers = {**_headers(mysql_tenant), "Content-Length": "100"}
    result = call_asgi(create_app(small_engine), "POST", _url(mysql_tenant), headers, _endless())
    assert result.status == 413
    assert result.chunks_consumed <= SMALL_LIMIT // CHUNK + 2


@pytest.mark.parametrize("value", ["abc", "-1", "1e3", "12 34", "+5", "0x10", ""])
def test_malformed_content_length_is_400(
    small_engine: Engine, mysql_tenant: Tenant, value: str
) -> None:
    headers = {**_headers(mysql_tenant), "Content-Length": value}
    result = call_asgi(create_app(small_engine), "POST", _url(mysql_tenant), headers,
                       iter([body(definition())]))
    assert result.status == 400
    assert result.json()["code"] == "bad_request"


def test_unauthenticated_body_is_never_read(small_engine: Engine, mysql_tenant: Tenant) -> None:
    result = call_asgi(create_app(small_engine), "POST", _url(mysql_tenant),
                       {"Content-Type": "application/json"}, _endless())
    assert result.status == 401
    assert result.chunks_consumed == 0


def test_client_disconnect_mid_body_is_not_a_500(
    small_engine: Engine, mysql_tenant: Tenant
) -> None:
    """The client goes away after one chunk: the app ends quietly (a 400, never a 500)."""
    result = call_asgi(create_app(small_engine), "POST", _url(mysql_tenant),
                       _headers(mysql_tenant), iter([b'{"a":']), disconnect=True)
    assert result.status == 400
    assert result.json()["code"] == "bad_request"


# --- never a 500 ---------------------------------------------------------------------


def test_every_hostile_response_is_a_problem(engine: Engine, mysql_tenant: Tenant) -> None:
    """A sweep over all the inputs above plus odd paths and headers, asserting < 500."""
    client: TestClient = client_for(engine)
    url = _url(mysql_tenant)
    for raw in [*BAD_JSON.values(), DEPTH_65, *(body(d) for d in ODD_DOCUMENTS.values())]:
        assert_safe(client.post(url, content=raw, headers=_headers(mysql_tenant)))
    odd_paths = [
        f"{url}/%00", f"{url}/{'x' * 5000}", f"{url}/a/versions/{'9' * 5000}",
        f"/v1/namespaces/{'n' * 5000}/definitions", "/v1/namespaces/%2F/definitions",
        f"{url}/..%2F..%2F", "/v1/namespaces//definitions", f"{url}/\u00e9/versions/latest",
    ]
    for path in odd_paths:
        assert_safe(client.get(path, headers=mysql_tenant.headers("read")))
    for authorization in ["Bearer " + "a" * 100_000, "Bearer \u00e9", "Bearer wv_zz_zz",
                          "bearer    ", "Bearer wv_0123456789abcdef_" + "A" * 43]:
        try:
            response = client.get(url, headers={"Authorization": authorization})
        except UnicodeEncodeError:
            continue
        assert_safe(response)
