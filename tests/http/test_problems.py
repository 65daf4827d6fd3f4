"""The one error mapping: every WeaveError class → status and problem+json; 404/405/500."""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest

from tests.http.conftest import Tenant, client_for, make_engine
from tests.http.helpers import PROBLEM, assert_problem
from weave_core.engine import Engine
from weave_core.foundation import errors
from weave_core.foundation.exactjson import loads
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database
from weave_http.problems import STATUS_BY_ERROR, problem_body, status_for

EXPECTED_STATUS = [
    (errors.ValidationError("bad", [errors.Problem("$.a", "invalid_field", "no")]), 422),
    (errors.NotFoundError("x"), 404),
    (errors.ConflictError("x"), 409),
    (errors.AlreadyExistsError("x"), 409),
    (errors.DefinitionConflictError("x"), 409),
    (errors.AuthenticationError("x"), 401),
    (errors.PermissionDeniedError("x"), 403),
    (errors.PayloadTooLargeError("x"), 413),
    (errors.InvalidJsonError("x"), 400),
    (errors.JsonTooDeepError("x"), 400),
    (errors.BadRequestError("x"), 400),
    (errors.UnsupportedMediaTypeError("x"), 415),
    (errors.LimitExceededError("x"), 429),
    (errors.DatabaseNotMigratedError("x"), 503),
    (errors.StorageError("x"), 503),
    (errors.TransactionRetriesExhaustedError("x"), 503),
    (errors.PluginError("x"), 500),
    # A bad --database-url stops a process at start-up; no request ever sees one.
    (errors.DatabaseURLError("x"), 500),
    (errors.UnsupportedDatabaseError("x"), 500),
    (errors.WeaveError("x"), 500),
]


@pytest.mark.parametrize(("error", "status"), EXPECTED_STATUS, ids=lambda v: str(v))
def test_status_of_every_error_class(error: errors.WeaveError, status: int) -> None:
    assert status_for(error)[0] == status


def test_every_error_class_is_mapped() -> None:
    exported = {
        getattr(errors, name)
        for name in errors.__all__
        if isinstance(getattr(errors, name), type)
        and issubclass(getattr(errors, name), errors.WeaveError)
    }
    tested = {type(error) for error, _ in EXPECTED_STATUS}
    assert exported == tested, "add every new error class to EXPECTED_STATUS"
    assert STATUS_BY_ERROR[-1][0] is errors.WeaveError  # the fallback row comes last


def test_problem_body_keeps_reserved_members() -> None:
    body = problem_body(
        status=409, code="conflict", title="Conflict", detail="d", instance="/x",
        extra={"status": 200, "code": "forged", "number": Decimal("1E+400")},
    )
    assert body["status"] == 409 and body["code"] == "conflict"
    assert body["number"] == Decimal("1E+400")


def test_unknown_route_is_a_problem(mysql_engine: Engine) -> None:
    client = client_for(mysql_engine)
    for path in ("/", "/v1", "/v1/nothing", "/v1/namespaces/x/definitions/a/versions"):
        assert_problem(client.get(path), 404, "route_not_found")


def test_wrong_method_is_a_problem_with_allow(mysql_engine: Engine) -> None:
    client = client_for(mysql_engine)
    response = client.delete("/v1/health")
    assert_problem(response, 405, "method_not_allowed")
    assert set(response.headers["allow"].split(", ")) == {"GET", "HEAD"}
    response = client.put("/v1/namespaces/x/definitions")
    assert_problem(response, 405, "method_not_allowed")
    assert set(response.headers["allow"].split(", ")) == {"GET", "HEAD", "POST"}


class ExplodingDatabase(Database):
    """A database whose every read raises an unexpected (non-Weave) exception."""

    def read(self, fn: object, *, name: str = "read", max_attempts: int = 3) -> object:  # type: ignore[override]
        raise RuntimeError("boom: an unexpected failure")


def test_unexpected_exception_is_a_logged_500(
    mysql_db: Database, plugin_host: PluginHost, mysql_tenant: Tenant,
    caplog: pytest.LogCaptureFixture,
) -> None:
    db = ExplodingDatabase(mysql_db.url, mysql_db.engine, mysql_db.dialect)
    # raise_server_exceptions stays on: the 500 is a response, not an escaping exception.
    client = client_for(make_engine(db, plugin_host))
    token = mysql_tenant.token("read")
    with caplog.at_level(logging.ERROR, logger="weave_http.problems"):
        response = client.get(
            f"/v1/namespaces/{mysql_tenant.namespace}/definitions",
            headers={"Authorization": f"Bearer {token}"},
        )
    problem = assert_problem(response, 500, "internal_error")
    assert "boom" not in response.text  # the cause stays in the log
    [record] = [r for r in caplog.records if "internal_error" in r.getMessage()]
    assert record.exc_info is not None and "boom" in str(record.exc_info[1])
    assert problem["error_id"] in record.getMessage()


def test_health_ok(any_engine: Engine) -> None:
    client = client_for(any_engine)
    response = client.get("/v1/health")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    health = loads(response.content)
    assert health["status"] == "ok" and health["database"] == "reachable"
    assert health["dialect"] in ("mysql", "sqlite")
    assert client.head("/v1/health").status_code == 200


def test_health_503_when_database_unreachable(plugin_host: PluginHost) -> None:
    db = Database.from_url("mysql+pymysql://weave:nothing@127.0.0.1:1/nowhere")
    try:
        client = client_for(make_engine(db, plugin_host))
        response = client.get("/v1/health")
    finally:
        db.dispose()
    problem = assert_problem(response, 503, "storage_error")
    assert problem["database"] == "unreachable"
    assert response.headers["content-type"] == PROBLEM
