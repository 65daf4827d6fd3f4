"""T12: every route, every permission, own/other/missing namespace, every token state.

The documented rule (docs/http-api.md, "Authentication and permissions"):

| caller                                                | own namespace | other/missing |
| ----------------------------------------------------- | ------------- | ------------- |
| no token, malformed, wrong scheme, unknown, revoked   | 401           | 401           |
| valid token with the route's permission (or admin)    | 2xx           | 404           |
| valid token without it                                | 403           | 404           |

Public routes (health, OpenAPI) answer 200 whatever the Authorization header says.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from starlette.testclient import TestClient

from tests.http.conftest import Tenant, client_for, make_engine, new_tenant
from tests.http.helpers import JSON_HEADERS, assert_problem, body, definition
from weave_core.db import Database
from weave_core.identity import Permission, revoke_token
from weave_core.plugins import PluginHost

DEFINITIONS = "/v1/namespaces/{ns}/definitions"

# (method, path template, permission the route declares, status on success)
PROTECTED_ROUTES = [
    ("POST", DEFINITIONS, Permission.PUBLISH, 200),  # identical re-publish of "matrix" v1
    ("GET", DEFINITIONS, Permission.READ, 200),
    ("GET", DEFINITIONS + "/matrix", Permission.READ, 200),
    ("GET", DEFINITIONS + "/matrix/versions/1", Permission.READ, 200),
    ("GET", DEFINITIONS + "/matrix/versions/latest", Permission.READ, 200),
]
PUBLIC_ROUTES = [("GET", "/v1/health"), ("GET", "/openapi.json")]
NAMESPACES = ["own", "other", "missing"]
BAD_TOKENS = ["none", "malformed", "wrong_scheme", "empty_bearer", "unknown", "revoked"]


@dataclass
class World:
    client: TestClient
    own: Tenant
    other: Tenant
    missing: str
    revoked: str

    def namespace(self, which: str) -> str:
        return {"own": self.own.namespace, "other": self.other.namespace,
                "missing": self.missing}[which]

    def authorization(self, credential: str) -> dict[str, str]:
        if credential == "none":
            return {}
        value = {
            "malformed": "Bearer not a token!",
            "wrong_scheme": f"Basic {self.own.token(Permission.ADMIN)}",
            "empty_bearer": "Bearer ",
            "unknown": f"Bearer wv_{secrets.token_hex(8)}_{secrets.token_urlsafe(32)}",
            "revoked": f"Bearer {self.revoked}",
        }.get(credential)
        if value is None:
            value = f"Bearer {self.own.token(Permission(credential))}"
        return {"Authorization": value}

    def call(
        self, method: str, template: str, namespace: str, credential: str
    ) -> httpx.Response:
        path = template.format(ns=self.namespace(namespace))
        headers = self.authorization(credential)
        if method == "POST":
            return self.client.post(
                path, content=body(definition("matrix", "1")), headers={**JSON_HEADERS, **headers}
            )
        return self.client.request(method, path, headers=headers)


@pytest.fixture(scope="module")
def world(mysql_db: Database, plugin_host: PluginHost) -> Iterator[World]:
    client = client_for(make_engine(mysql_db, plugin_host))
    own, other = new_tenant(mysql_db), new_tenant(mysql_db)
    for tenant in (own, other):
        response = client.post(
            f"/v1/namespaces/{tenant.namespace}/definitions",
            content=body(definition("matrix", "1")),
            headers={**JSON_HEADERS, **tenant.headers(Permission.PUBLISH)},
        )
        assert response.status_code == 201, response.text
    revoked = own.token(Permission.ADMIN, Permission.READ)
    revoke_token(mysql_db, revoked.split("_")[1])
    yield World(client, own, other, f"ns-missing-{secrets.token_hex(6)}", revoked)


def _matrix() -> list[object]:
    return list(_cases())


def _cases() -> Iterator[object]:
    for method, template, needed, ok in PROTECTED_ROUTES:
        for namespace in NAMESPACES:
            for permission in Permission:
                if namespace != "own":
                    expected = 404
                elif permission in (needed, Permission.ADMIN):
                    expected = ok
                else:
                    expected = 403
                yield pytest.param(method, template, namespace, permission.value, expected,
                                   id=f"{method} {template} {namespace} {permission.value}")
            for credential in BAD_TOKENS:
                yield pytest.param(method, template, namespace, credential, 401,
                                   id=f"{method} {template} {namespace} {credential}")


@pytest.mark.parametrize(("method", "template", "namespace", "credential", "expected"), _matrix())
def test_protected_route(
    world: World, method: str, template: str, namespace: str, credential: str, expected: int
) -> None:
    response = world.call(method, template, namespace, credential)
    if expected == 401:
        assert_problem(response, 401, "unauthenticated")
        assert response.headers["www-authenticate"].startswith("Bearer")
    elif expected == 403:
        problem = assert_problem(response, 403, "permission_denied")
        assert problem["permission"] in ("publish", "read")
    elif expected == 404:
        assert_problem(response, 404, "not_found")
    else:
        assert response.status_code == expected, response.text


@pytest.mark.parametrize(("method", "path"), PUBLIC_ROUTES)
@pytest.mark.parametrize("credential", BAD_TOKENS + [p.value for p in Permission])
def test_public_route(world: World, method: str, path: str, credential: str) -> None:
    response = world.client.request(method, path, headers=world.authorization(credential))
    assert response.status_code == 200


def test_every_route_is_in_the_matrix(world: World) -> None:
    """A new protected route must be added to PROTECTED_ROUTES (and so to the matrix)."""
    from weave_http.routes import all_api_routes

    declared = {(r.method, r.path, r.permission) for r in all_api_routes()}
    covered: set[tuple[str, str, Permission | None]] = {
        (m, DEFINITIONS, p) for m, t, p, _ in PROTECTED_ROUTES if t == DEFINITIONS
    }
    covered |= {("GET", DEFINITIONS + "/{definition_id}", Permission.READ),
                ("GET", DEFINITIONS + "/{definition_id}/versions/{version}", Permission.READ)}
    covered |= {(m, p, None) for m, p in PUBLIC_ROUTES}
    assert declared == covered
