"""Describing the API's calls: what each one sends and how its answer is read (sans-IO).

A ``_Call`` is one request and its reader; ``_Settings`` builds every call of the client
from the connection settings. A call made of several requests (every page of a history, a
lookup by key) is a *plan*: a generator that yields calls and receives their answers, so
that ``Client`` and ``AsyncClient`` are only two ways to send them (``Plan``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote, urlencode

import httpx

from weave_sdk._answers import (
    _definition_version,
    _definitions,
    _description,
    _health,
    _history_page,
    _publish_result,
    _started,
    _versions,
    _workflow_page,
)
from weave_sdk._version import __version__
from weave_sdk.definition import Workflow
from weave_sdk.errors import ConfigurationError, WeaveConnectionError
from weave_sdk.exactjson import dumps
from weave_sdk.models import (
    DefinitionSummary,
    DefinitionVersion,
    Health,
    PublishResult,
    VersionSummary,
)
from weave_sdk.workflows import (
    HistoryEvent,
    HistoryPage,
    WorkflowDescription,
    WorkflowExecution,
    WorkflowPage,
    WorkflowStatus,
)

DEFAULT_TIMEOUT = 30.0
"""Seconds to wait for connecting, sending and each read, unless ``timeout=`` says otherwise."""

ENV_URL = "WEAVE_URL"
ENV_TOKEN = "WEAVE_TOKEN"
ENV_NAMESPACE = "WEAVE_NAMESPACE"

T = TypeVar("T")

Plan = Generator["_Call[Any]", Any, T]
"""Several calls in a row: yields each call, is sent its answer, returns the result."""


@dataclass(frozen=True)
class _Call(Generic[T]):
    """One HTTP call: what to send and how to read the answer."""

    method: str
    path: str
    read: Callable[[httpx.Response], T]
    content: bytes | None = None
    timeout: float | None = None
    """Seconds for this call's reads (a long poll), instead of the client's timeout."""


def _segment(value: str, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string")
    return quote(value, safe="")


def _document(definition: Workflow | Mapping[str, Any]) -> bytes:
    if isinstance(definition, Workflow):
        document: Any = definition.to_json()
    elif isinstance(definition, Mapping):
        document = definition
    else:
        raise TypeError("publish() takes a Workflow or a definition document (dict)")
    return dumps(document).encode("utf-8")


def _start_body(
    definition_id: str,
    input: Any,
    version: str,
    idempotency_key: str | None,
    operation_type: str | None,
) -> bytes:
    if not isinstance(definition_id, str) or not definition_id:
        raise ValueError("definition_id must be a non-empty string")
    body: dict[str, Any] = {
        "definition_id": definition_id,
        "version": version,
        "input": input,
        "idempotency_key": idempotency_key if idempotency_key is not None else uuid.uuid4().hex,
    }
    if operation_type is not None:
        body["operation_type"] = operation_type
    return dumps(body).encode("utf-8")


def _rfc3339(value: datetime) -> str:
    """UTC with a ``Z``; a naive datetime is taken as UTC (the server's convention)."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.isoformat() + "Z"


@dataclass(frozen=True)
class _ListQuery:
    """The filters of ``list_workflows`` (every one optional; they combine with AND)."""

    status: WorkflowStatus | str | None = None
    definition_id: str | None = None
    version: str | None = None
    paused: bool | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    idempotency_key: str | None = None
    operation_type: str | None = None

    def params(self, cursor: str | None, limit: int | None) -> dict[str, str]:
        params: dict[str, str] = {}
        if self.idempotency_key is not None:
            params["idempotency_key"] = self.idempotency_key
        if self.operation_type is not None:
            params["operation_type"] = self.operation_type
        if self.status is not None:
            params["status"] = str(WorkflowStatus(self.status).value)
        if self.definition_id is not None:
            params["definition_id"] = self.definition_id
        if self.version is not None:
            params["version"] = self.version
        if self.paused is not None:
            params["paused"] = "true" if self.paused else "false"
        if self.created_after is not None:
            params["created_after"] = _rfc3339(self.created_after)
        if self.created_before is not None:
            params["created_before"] = _rfc3339(self.created_before)
        if cursor is not None:
            params["cursor"] = cursor
        if limit is not None:
            params["limit"] = str(limit)
        return params


def _key(value: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("idempotency_key must be a non-empty string")
    return value


def _with_query(path: str, params: Mapping[str, str]) -> str:
    return f"{path}?{urlencode(params)}" if params else path


class _Settings:
    """Connection settings resolved from arguments, then ``WEAVE_*`` environment variables."""

    def __init__(self, base_url: str | None, token: str | None, namespace: str | None) -> None:
        url = base_url or os.environ.get(ENV_URL)
        if not url:
            raise ConfigurationError(f"no server URL: pass base_url= or set {ENV_URL}")
        if not url.startswith(("http://", "https://")):
            raise ConfigurationError(f"server URL {url!r} must start with http:// or https://")
        self.base_url = url.rstrip("/")
        self.token = token or os.environ.get(ENV_TOKEN) or None
        self.namespace = namespace or os.environ.get(ENV_NAMESPACE) or None

    def headers(self) -> dict[str, str]:
        headers = {"accept": "application/json", "user-agent": f"weave-sdk/{__version__}"}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        return headers

    def ns_path(self, rest: str) -> str:
        if not self.namespace:
            raise ConfigurationError(f"no namespace: pass namespace= or set {ENV_NAMESPACE}")
        return f"/v1/namespaces/{_segment(self.namespace, 'namespace')}{rest}"

    # the calls

    def publish(self, definition: Workflow | Mapping[str, Any]) -> _Call[PublishResult]:
        return _Call("POST", self.ns_path("/definitions"), _publish_result, _document(definition))

    def get_definition(self, definition_id: str, version: str) -> _Call[DefinitionVersion]:
        rest = (
            f"/definitions/{_segment(definition_id, 'definition_id')}"
            f"/versions/{_segment(version, 'version')}"
        )
        return _Call("GET", self.ns_path(rest), _definition_version)

    def list_definitions(self) -> _Call[list[DefinitionSummary]]:
        return _Call("GET", self.ns_path("/definitions"), _definitions)

    def list_versions(self, definition_id: str) -> _Call[list[VersionSummary]]:
        rest = f"/definitions/{_segment(definition_id, 'definition_id')}"
        return _Call("GET", self.ns_path(rest), _versions)

    def health(self) -> _Call[Health]:
        return _Call("GET", "/v1/health", _health)

    def start(self, body: bytes) -> _Call[tuple[bool, WorkflowExecution]]:
        return _Call("POST", self.ns_path("/workflows"), _started, body)

    def get_workflow(self, workflow_id: str) -> _Call[WorkflowDescription]:
        rest = f"/workflows/{_segment(workflow_id, 'workflow_id')}"
        return _Call("GET", self.ns_path(rest), _description)

    def list_workflows(
        self, query: _ListQuery, cursor: str | None, limit: int | None
    ) -> _Call[WorkflowPage]:
        path = _with_query(self.ns_path("/workflows"), query.params(cursor, limit))
        return _Call("GET", path, _workflow_page)

    def history(self, workflow_id: str, after: int, limit: int | None) -> _Call[HistoryPage]:
        params = {"after": str(after)} if after else {}
        if limit is not None:
            params["limit"] = str(limit)
        rest = f"/workflows/{_segment(workflow_id, 'workflow_id')}/history"
        return _Call("GET", _with_query(self.ns_path(rest), params), _history_page)


def _request_headers(call: _Call[Any]) -> dict[str, str]:
    return {"content-type": "application/json"} if call.content is not None else {}


# --- plans: calls of several requests -------------------------------------------------


def find_plan(
    settings: _Settings, idempotency_key: str, operation_type: str | None
) -> Plan[WorkflowExecution | None]:
    """The instance started with ``idempotency_key``: one indexed read of one item."""
    query = _ListQuery(idempotency_key=_key(idempotency_key), operation_type=operation_type)
    page: WorkflowPage = yield settings.list_workflows(query, None, 1)
    return page.items[0] if page.items else None


def history_plan(
    settings: _Settings, workflow_id: str, page_size: int | None
) -> Plan[list[HistoryEvent]]:
    """Every page of an instance's history, in revision order."""
    events: list[HistoryEvent] = []
    after = 0
    while True:
        page: HistoryPage = yield settings.history(workflow_id, after, page_size)
        events.extend(page.items)
        if page.next_cursor is None:
            return events
        after = page.next_cursor


def next_page(
    settings: _Settings, query: _ListQuery, page_size: int | None, page: WorkflowPage | None
) -> _Call[WorkflowPage] | None:
    """The call for the page after ``page`` (``None``: the first), or ``None`` at the end."""
    if page is None:
        return settings.list_workflows(query, None, page_size)
    if page.next_cursor is None:
        return None
    return settings.list_workflows(query, page.next_cursor, page_size)


# --- what both clients share ----------------------------------------------------------


def _failed(call: _Call[Any], base_url: str, exc: httpx.TransportError) -> WeaveConnectionError:
    return WeaveConnectionError(f"{call.method} {base_url}{call.path} failed: {exc!r}")


class _Transport:
    """What both clients hold: the resolved connection settings."""

    _settings: _Settings

    @property
    def base_url(self) -> str:
        return self._settings.base_url

    @property
    def namespace(self) -> str | None:
        return self._settings.namespace
