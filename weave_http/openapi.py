"""The OpenAPI 3.1 document, built from the route table and the pydantic wire models.

Nothing here is written by hand per route: paths, methods, parameters, security, request
and response schemas all come from ``routes.ApiRoute`` declarations and
``models.*.model_json_schema``. A test checks the document against the app's real routes.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, Final

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.requests import Request
from starlette.responses import Response

from weave_core.foundation import exactjson
from weave_http.models import JSON_MEDIA_TYPE, REQUEST_MODELS, RESPONSE_MODELS, ProblemDetails
from weave_http.problems import PROBLEM_MEDIA_TYPE
from weave_http.routes import ApiRoute, Context

OPENAPI_PATH: Final = "/openapi.json"
REF_TEMPLATE: Final = "#/components/schemas/{model}"
_PARAM = re.compile(r"{([a-zA-Z_][a-zA-Z0-9_]*)}")

_PARAMETER_DOCS: Final = {
    "ns": "the namespace (a token sees only its own; any other is 404)",
    "definition_id": "the definition id",
    "version": "a version, or 'latest' for the most recently published one",
    "queue": "a queue name",
    "task_id": "a task id",
    "workflow_id": "a workflow instance id",
}

_STATUS_TEXT: Final = {
    400: "malformed request or JSON (invalid_json, json_too_deep, bad_request)",
    401: "missing, malformed, unknown or revoked token (unauthenticated)",
    403: "the token lacks the permission (permission_denied)",
    404: "unknown object, or another namespace (not_found)",
    409: "conflicts with what is recorded (definition_version_conflict, attempt_superseded, "
    "lease_expired, report_conflict, task_owner_unverified)",
    413: "body larger than max_body_bytes (payload_too_large)",
    415: "body not sent as application/json (unsupported_media_type)",
    422: "document invalid; every problem listed (validation_failed)",
    429: "a capacity limit is reached; retry later (limit_exceeded)",
    503: "database unreachable or not migrated (storage_error, database_not_migrated)",
}


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF_TEMPLATE.format(model=model.__name__)}


def _schemas() -> dict[str, Any]:
    pairs = [(m, "validation") for m in REQUEST_MODELS]
    pairs += [(m, "serialization") for m in RESPONSE_MODELS]
    _, top = models_json_schema(pairs, ref_template=REF_TEMPLATE)  # type: ignore[arg-type]  # Literal modes
    schemas: dict[str, Any] = top.get("$defs", {})
    return schemas


def _problem(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {PROBLEM_MEDIA_TYPE: {"schema": _ref(ProblemDetails)}},
    }


def _operation(route: ApiRoute) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": route.operation_id,
        "summary": route.summary,
        "tags": list(route.tags),
    }
    params = _PARAM.findall(route.path)
    if params:
        operation["parameters"] = [
            {
                "name": name,
                "in": "path",
                "required": True,
                "description": _PARAMETER_DOCS.get(name, name),
                "schema": {"type": "string"},
            }
            for name in params
        ]
    if route.query:
        operation.setdefault("parameters", []).extend(
            {"name": q.name, "in": "query", "required": False, "description": q.description,
             "schema": dict(q.schema)}
            for q in route.query
        )
    if route.request_model is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {JSON_MEDIA_TYPE: {"schema": _ref(route.request_model)}},
        }
    responses: dict[str, Any] = {}
    for status, (model, description) in sorted(route.responses.items()):
        response: dict[str, Any] = {"description": description}
        if model is not None:
            response["content"] = {JSON_MEDIA_TYPE: {"schema": _ref(model)}}
        responses[str(status)] = response
    errors = set(route.errors)
    if route.permission is None:
        operation["security"] = []
    else:
        operation["security"] = [{"bearer": []}]
        operation["x-weave-permission"] = route.permission.value
        errors |= {401, 403, 404}
    for status in sorted(errors):
        responses[str(status)] = _problem(_STATUS_TEXT.get(status, "error"))
    responses["default"] = _problem("unexpected error (internal_error)")
    operation["responses"] = responses
    return operation


def build_openapi(routes: tuple[ApiRoute, ...], *, version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document for ``routes``."""
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Weave API",
            "version": version,
            "description": "Durable workflow engine. Errors are application/problem+json "
            "with a stable 'code'; see docs/http-api.md.",
        },
        "paths": paths,
        "components": {
            "schemas": _schemas(),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "an API token from 'weave token create'",
                }
            },
        },
        "security": [{"bearer": []}],
    }


@cache
def _document_text(version: str) -> str:
    from weave_http.routes import all_api_routes

    return exactjson.dumps(build_openapi(all_api_routes(), version=version))


async def openapi_endpoint(request: Request, ctx: Context) -> Response:
    from weave_http.routes.health import server_version

    return Response(_document_text(server_version()), media_type=JSON_MEDIA_TYPE)


API_ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        method="GET",
        path=OPENAPI_PATH,
        endpoint=openapi_endpoint,
        operation_id="getOpenApi",
        summary="This OpenAPI 3.1 document",
        permission=None,
        responses={200: (None, "the OpenAPI document (application/json)")},
        tags=("meta",),
    ),
)

__all__ = ["API_ROUTES", "OPENAPI_PATH", "build_openapi"]
