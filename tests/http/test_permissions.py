"""T12: every route, every permission, own/other/missing namespace, every token state.

The documented rule (docs/http-api.md, "Authentication and permissions"):

| caller                                                | own namespace | other/missing |
| ----------------------------------------------------- | ------------- | ------------- |
| no token, malformed, wrong scheme, unknown, revoked   | 401           | 401           |
| valid token with the route's permission (or admin)    | 2xx           | 404           |
| valid token without it                                | 403           | 404           |

Public routes (health, OpenAPI, metrics without a token) answer 200 whatever the
Authorization header says.
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
from weave_core.access.identity import Permission, revoke_token
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database

NS = "/v1/namespaces/{ns}"
DEFINITIONS = NS + "/definitions"
WORKFLOWS = NS + "/workflows"
TASKS = NS + "/tasks"
BOGUS_ATTEMPT = {"attempt_id": "no-such-attempt"}
CLAIM_BODY = {"worker_id": "matrix", "handlers": [{"name": "hello", "version": "1"}],
              "max_tasks": 1, "wait_seconds": 0}
TASK_BODY = {"queue": "matrix-q", "handler": "hello", "input": {}}
STALE_CONTROL = {"expected_control_version": 999_999, "operation_id": "matrix-op",
                 "reason": "permission matrix"}
RESOLVE_BODY = {"action": "resolve", "operation_id": "matrix-review", "reason": "matrix"}
START_BODY = {"definition_id": "matrix", "version": "1", "input": {},
              "idempotency_key": "matrix-start"}
SIGNAL_BODY = {"signal_id": "matrix-signal", "name": "matrix", "correlation_key": "k"}


@dataclass(frozen=True)
class RouteCase:
    """One protected route as the matrix calls it.

    ``template`` may hold ``{ns}``, ``{wid}`` (a workflow of the own namespace) and
    ``{task}`` (a standalone task of the own namespace). When the authorised answer is a
    problem (a bogus attempt id, say), ``ok_code`` names its code: it differs from the
    ``not_found`` of a hidden namespace, so the check still proves authorisation passed.
    """

    method: str
    template: str
    permission: Permission
    ok: frozenset[int]
    declared: str
    """The route's path as declared (for the coverage check)."""
    body: object = None
    ok_code: str | None = None


def route(
    method: str, template: str, permission: Permission, *ok: int, declared: str | None = None,
    body: object = None, ok_code: str | None = None,
) -> RouteCase:
    return RouteCase(method, template, permission, frozenset(ok), declared or template, body,
                     ok_code)


PROTECTED_ROUTES = [
    # identical re-publish of "matrix" v1
    route("POST", DEFINITIONS, Permission.PUBLISH, 200, body=definition("matrix", "1")),
    route("GET", DEFINITIONS, Permission.READ, 200),
    route("GET", NS + "/handlers", Permission.READ, 200),
    route("GET", DEFINITIONS + "/matrix", Permission.READ, 200,
          declared=DEFINITIONS + "/{definition_id}"),
    route("GET", DEFINITIONS + "/matrix/versions/1", Permission.READ, 200,
          declared=DEFINITIONS + "/{definition_id}/versions/{version}"),
    route("GET", DEFINITIONS + "/matrix/versions/latest", Permission.READ, 200,
          declared=DEFINITIONS + "/{definition_id}/versions/{version}"),
    # workflows: the first authorised start creates (201), every later one is a replay (200)
    route("POST", WORKFLOWS, Permission.START, 200, 201, body=START_BODY),
    route("GET", WORKFLOWS, Permission.READ, 200),
    route("GET", WORKFLOWS + "/{wid}", Permission.READ, 200,
          declared=WORKFLOWS + "/{workflow_id}"),
    route("GET", WORKFLOWS + "/{wid}/history", Permission.READ, 200,
          declared=WORKFLOWS + "/{workflow_id}/history"),
    route("GET", WORKFLOWS + "/{wid}/result", Permission.READ, 200,
          declared=WORKFLOWS + "/{workflow_id}/result"),
    # signals (issue 6): "matrix" declares no signal, so an authorised one is refused with
    # 422 signal_not_declared (#12) — never the not_found of a hidden namespace
    route("POST", WORKFLOWS + "/{wid}/signals", Permission.SIGNAL, 422,
          declared=WORKFLOWS + "/{workflow_id}/signals", body=SIGNAL_BODY,
          ok_code="signal_not_declared"),
    route("GET", WORKFLOWS + "/{wid}/signals", Permission.READ, 200,
          declared=WORKFLOWS + "/{workflow_id}/signals"),
    # controls and review (issue 7): a stale version / a running instance answer 409
    *(route("POST", WORKFLOWS + "/{wid}/" + name, Permission.CONTROL, 409,
            declared=WORKFLOWS + "/{workflow_id}/" + name, body=STALE_CONTROL,
            ok_code="control_version_conflict") for name in ("pause", "resume", "cancel")),
    route("POST", WORKFLOWS + "/{wid}/review", Permission.REVIEW, 409,
          declared=WORKFLOWS + "/{workflow_id}/review", body=RESOLVE_BODY,
          ok_code="not_in_review"),
    # dispatch
    route("POST", NS + "/queues/matrix-q/claim", Permission.WORK, 200,
          declared=NS + "/queues/{queue}/claim", body=CLAIM_BODY),
    route("POST", TASKS + "/{task}/heartbeat", Permission.WORK, 404,
          declared=TASKS + "/{task_id}/heartbeat", body=BOGUS_ATTEMPT, ok_code="attempt_not_found"),
    route("POST", TASKS + "/{task}/complete", Permission.WORK, 404,
          declared=TASKS + "/{task_id}/complete",
          body={**BOGUS_ATTEMPT, "outcome": "succeeded", "output": {}},
          ok_code="attempt_not_found"),
    route("POST", TASKS, Permission.WORK, 201, body=TASK_BODY),
    route("GET", TASKS + "/{task}", Permission.READ, 200, declared=TASKS + "/{task_id}"),
    # task records (issue 12)
    route("GET", TASKS + "/{task}/attempts", Permission.READ, 200,
          declared=TASKS + "/{task_id}/attempts"),
    route("GET", TASKS + "/{task}/events", Permission.READ, 200,
          declared=TASKS + "/{task_id}/events"),
    route("POST", TASKS + "/no-such-task/cancel", Permission.WORK, 404,
          declared=TASKS + "/{task_id}/cancel", body={}, ok_code="task_not_found"),
    route("PUT", NS + "/queues/matrix-q", Permission.ADMIN, 200,
          declared=NS + "/queues/{queue}", body={"capacity": 1000}),
    route("GET", NS + "/queues/matrix-q", Permission.READ, 200, declared=NS + "/queues/{queue}"),
    route("PUT", NS + "/quota", Permission.ADMIN, 200, body={"task_quota": 100_000}),
    route("GET", NS + "/quota", Permission.READ, 200),
]
PUBLIC_ROUTES = [("GET", "/v1/health"), ("GET", "/openapi.json"), ("GET", "/metrics")]
NAMESPACES = ["own", "other", "missing"]
BAD_TOKENS = ["none", "malformed", "wrong_scheme", "empty_bearer", "unknown", "revoked"]


@dataclass
class World:
    client: TestClient
    own: Tenant
    other: Tenant
    missing: str
    revoked: str
    workflow_id: str
    task_id: str

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

    def call(self, case: RouteCase, namespace: str, credential: str) -> httpx.Response:
        path = case.template.format(
            ns=self.namespace(namespace), wid=self.workflow_id, task=self.task_id
        )
        headers = self.authorization(credential)
        content = None
        if case.body is not None:
            headers = {**JSON_HEADERS, **headers}
            content = body(case.body)
        response: httpx.Response = self.client.request(
            case.method, path, content=content, headers=headers
        )
        return response


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
    admin = {**JSON_HEADERS, **own.headers(Permission.ADMIN)}
    started = client.post(f"/v1/namespaces/{own.namespace}/workflows", content=body(
        {**START_BODY, "idempotency_key": "matrix-fixture"}), headers=admin)
    assert started.status_code == 201, started.text
    task = client.post(f"/v1/namespaces/{own.namespace}/tasks", content=body(TASK_BODY),
                       headers=admin)
    assert task.status_code == 201, task.text
    yield World(client, own, other, f"ns-missing-{secrets.token_hex(6)}", revoked,
                started.json()["workflow_id"], task.json()["task_id"])


def _matrix() -> list[object]:
    return list(_cases())


def _cases() -> Iterator[object]:
    for case in PROTECTED_ROUTES:
        name = f"{case.method} {case.template}"
        for namespace in NAMESPACES:
            for permission in Permission:
                if namespace != "own":
                    expected = "hidden"
                elif permission in (case.permission, Permission.ADMIN):
                    expected = "ok"
                else:
                    expected = "forbidden"
                yield pytest.param(case, namespace, permission.value, expected,
                                   id=f"{name} {namespace} {permission.value}")
            for credential in BAD_TOKENS:
                yield pytest.param(case, namespace, credential, "unauthenticated",
                                   id=f"{name} {namespace} {credential}")


@pytest.mark.parametrize(("case", "namespace", "credential", "expected"), _matrix())
def test_protected_route(
    world: World, case: RouteCase, namespace: str, credential: str, expected: str
) -> None:
    response = world.call(case, namespace, credential)
    if expected == "unauthenticated":
        assert_problem(response, 401, "unauthenticated")
        assert response.headers["www-authenticate"].startswith("Bearer")
    elif expected == "forbidden":
        problem = assert_problem(response, 403, "permission_denied")
        assert problem["permission"] == case.permission.value
    elif expected == "hidden":
        assert_problem(response, 404, "not_found")
    elif case.ok_code is not None:
        assert_problem(response, min(case.ok), case.ok_code)
    else:
        assert response.status_code in case.ok, response.text


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
        (c.method, c.declared, c.permission) for c in PROTECTED_ROUTES
    }
    covered |= {(m, p, None) for m, p in PUBLIC_ROUTES}
    assert declared == covered
