"""Authentication without a round trip per request, and revocation within one second."""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy import event
from starlette.requests import Request

from tests.http.conftest import Tenant, client_for
from tests.http.helpers import assert_problem
from weave_core.access.identity import TOKEN_CACHE_SECONDS, Permission, revoke_token
from weave_core.engine import Engine
from weave_core.foundation.errors import AuthenticationError
from weave_http.auth import bearer_token


def _get(client: Any, tenant: Tenant) -> Any:
    return client.get(f"/v1/namespaces/{tenant.namespace}/workflows",
                      headers=tenant.headers(Permission.READ))


def test_a_checked_token_costs_no_query_and_a_revoked_one_stops_within_a_second(
    any_engine: Engine, tenant: Tenant
) -> None:
    client = client_for(any_engine)
    assert _get(client, tenant).status_code == 200
    seen: list[str] = []

    def _before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    event.listen(any_engine.db.engine, "before_cursor_execute", _before)
    try:
        assert _get(client, tenant).status_code == 200
    finally:
        event.remove(any_engine.db.engine, "before_cursor_execute", _before)
    assert not [s for s in seen if "weave_api_tokens" in s]
    token = tenant.token(Permission.READ)
    revoke_token(any_engine.db, token.split("_")[1])  # wv_<token id>_<secret>
    time.sleep(TOKEN_CACHE_SECONDS + 0.1)
    assert_problem(_get(client, tenant), 401, "unauthenticated")


def test_a_failed_check_is_never_trusted(any_engine: Engine, tenant: Tenant) -> None:
    client = client_for(any_engine)
    bad = {"Authorization": "Bearer wv_" + "0" * 16 + "_" + "x" * 40}
    for _ in range(2):
        response = client.get(f"/v1/namespaces/{tenant.namespace}/workflows", headers=bad)
        assert_problem(response, 401, "unauthenticated")


@pytest.mark.parametrize("token", [
    "wv_abc_d\u00e9f", "wv_abc_\u0663\u0664", "wv_abc_de f", "wv_abc_de\tf", "wv_abc_de\x00f",
    "wv_abc_de;f", "wv_abc_de\"f", "a" * 513,
])
def test_a_token_outside_token68_is_refused_before_any_lookup(token: str) -> None:
    """RFC 6750 token68 only: ASCII letters and digits (not every letter or digit Unicode
    knows) and ``-._~+/=``; refused as malformed, without a look at the cache or the
    database."""
    request = Request({"type": "http", "headers": [
        (b"authorization", f"Bearer {token}".encode())]})
    with pytest.raises(AuthenticationError) as refused:
        bearer_token(request)
    assert "malformed" in str(refused.value) or len(token) > 512


@pytest.mark.parametrize("token", ["wv_0123abcDEF_xyz", "a-b.c_d~e+f/g==", "Z" * 512])
def test_a_token68_token_is_taken_as_sent(token: str) -> None:
    request = Request({"type": "http",
                       "headers": [(b"authorization", f"Bearer  {token} ".encode())]})
    assert bearer_token(request) == token
