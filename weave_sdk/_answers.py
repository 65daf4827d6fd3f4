"""Reading the API's answers: exact JSON bodies, typed models, typed errors.

Sans-IO: each reader takes an ``httpx.Response`` whatever sent it, so ``Client`` and
``AsyncClient`` read every answer with the same code. Error answers
(``application/problem+json``) become ``WeaveAPIError`` subclasses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import httpx
import pydantic

from weave_sdk.errors import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InvalidResponseError,
    NotFoundError,
    PermissionDeniedError,
    Problem,
    RateLimitedError,
    ServerError,
    ValidationError,
    WeaveAPIError,
)
from weave_sdk.exactjson import JSONDecodeError, loads
from weave_sdk.models import (
    DefinitionSummary,
    DefinitionVersion,
    Health,
    PublishResult,
    VersionSummary,
)
from weave_sdk.workflows import (
    HistoryPage,
    WorkflowDescription,
    WorkflowExecution,
    WorkflowPage,
)

M = TypeVar("M", bound=pydantic.BaseModel)


def _json_body(response: httpx.Response) -> Any:
    try:
        return loads(response.content)
    except JSONDecodeError as exc:
        raise InvalidResponseError(
            f"{response.request.method} {response.request.url.path}: answer is not exact "
            f"JSON: {exc}",
            status=response.status_code,
            body=response.content,
        ) from exc


def _retry_after(response: httpx.Response) -> int | None:
    value = response.headers.get("retry-after", "")
    return int(value) if value.isdigit() else None


def _problems(raw: Any) -> list[Problem]:
    problems: list[Problem] = []
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, Mapping) and all(
                isinstance(item.get(k), str) for k in ("path", "code", "message")
            ):
                problems.append(Problem(item["path"], item["code"], item["message"]))
    return problems


def api_error(response: httpx.Response) -> WeaveAPIError:
    """The typed error for an error answer (problem+json, or anything else the server sent)."""
    status = response.status_code
    try:
        body = loads(response.content) if response.content else {}
    except JSONDecodeError:
        body = {}
    problem: dict[str, Any] = dict(body) if isinstance(body, Mapping) else {}
    code = problem.get("code")
    if not isinstance(code, str):
        code = f"http_{status}"
    detail = problem.get("detail")
    if not isinstance(detail, str):
        title = problem.get("title")
        detail = title if isinstance(title, str) else (response.reason_phrase or f"HTTP {status}")
    if status == 422:
        return ValidationError(status, code, detail, problem, _problems(problem.get("problems")))
    if status == 429:
        return RateLimitedError(status, code, detail, problem, _retry_after(response))
    by_status: dict[int, type[WeaveAPIError]] = {
        400: BadRequestError,
        401: AuthenticationError,
        403: PermissionDeniedError,
        404: NotFoundError,
        409: ConflictError,
        413: BadRequestError,
        415: BadRequestError,
    }
    cls = by_status.get(status, ServerError if status >= 500 else WeaveAPIError)
    return cls(status, code, detail, problem)


def _model(model: type[M], data: Any, response: httpx.Response) -> M:
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        raise InvalidResponseError(
            f"{response.request.url.path}: unexpected answer shape for {model.__name__}: {exc}",
            status=response.status_code,
            body=response.content,
        ) from exc


def _expect(response: httpx.Response, *statuses: int) -> Any:
    if response.status_code not in statuses:
        raise api_error(response)
    return _json_body(response)


def _items(response: httpx.Response, model: type[M]) -> list[M]:
    body = _expect(response, 200)
    items = body.get("items") if isinstance(body, Mapping) else None
    if not isinstance(items, list):
        raise InvalidResponseError(
            f"{response.request.url.path}: expected an object with 'items'",
            status=response.status_code,
            body=response.content,
        )
    return [_model(model, item, response) for item in items]


def _publish_result(response: httpx.Response) -> PublishResult:
    return _model(PublishResult, _expect(response, 200, 201), response)


def _definition_version(response: httpx.Response) -> DefinitionVersion:
    return _model(DefinitionVersion, _expect(response, 200), response)


def _definitions(response: httpx.Response) -> list[DefinitionSummary]:
    return _items(response, DefinitionSummary)


def _versions(response: httpx.Response) -> list[VersionSummary]:
    return _items(response, VersionSummary)


def _started(response: httpx.Response) -> tuple[bool, WorkflowExecution]:
    body = _expect(response, 200, 201)
    return response.status_code == 201, _model(WorkflowExecution, body, response)


def _description(response: httpx.Response) -> WorkflowDescription:
    return _model(WorkflowDescription, _expect(response, 200), response)


def _workflow_page(response: httpx.Response) -> WorkflowPage:
    return _model(WorkflowPage, _expect(response, 200), response)


def _history_page(response: httpx.Response) -> HistoryPage:
    return _model(HistoryPage, _expect(response, 200), response)


def _health(response: httpx.Response) -> Health:
    if response.status_code not in (200, 503):
        raise api_error(response)
    try:
        body = loads(response.content) if response.content else {}
    except JSONDecodeError:
        body = {}
    return Health(
        ok=response.status_code == 200,
        status_code=response.status_code,
        body=dict(body) if isinstance(body, Mapping) else {},
    )
