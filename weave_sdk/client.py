"""HTTP clients of the Weave API: ``Client`` (blocking) and ``AsyncClient`` (asyncio).

Both speak to the same routes (DESIGN.md §10) and share how requests are built and
answers are read: each method describes one call (``_Call``), and the two classes only
differ in how they send it. Bodies go out as exact JSON (``Decimal`` never becomes a
float) and come back parsed exactly (``int``/``Decimal``; NaN and duplicate keys refused).
Error answers (``application/problem+json``) raise ``WeaveAPIError`` subclasses.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Generic, TypeVar
from urllib.parse import quote, urlencode

import httpx
import pydantic

from weave_sdk._version import __version__
from weave_sdk.definition import Workflow
from weave_sdk.errors import (
    AuthenticationError,
    BadRequestError,
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
)
from weave_sdk.exactjson import JSONDecodeError, dumps, loads
from weave_sdk.models import (
    DefinitionSummary,
    DefinitionVersion,
    Health,
    PublishResult,
    VersionSummary,
)
from weave_sdk.views import AttemptInfo, HistoryTaskEvent, TaskEventInfo
from weave_sdk.workflows import (
    AsyncWorkflowHandle,
    HistoryEvent,
    HistoryPage,
    WorkflowDescription,
    WorkflowExecution,
    WorkflowHandle,
    WorkflowPage,
    WorkflowStatus,
)

DEFAULT_TIMEOUT = 30.0
"""Seconds to wait for connecting, sending and each read, unless ``timeout=`` says otherwise."""

ENV_URL = "WEAVE_URL"
ENV_TOKEN = "WEAVE_TOKEN"
ENV_NAMESPACE = "WEAVE_NAMESPACE"

T = TypeVar("T")
M = TypeVar("M", bound=pydantic.BaseModel)


# --- reading answers -----------------------------------------------------------------


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


# --- describing calls ----------------------------------------------------------------


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


# --- the clients ---------------------------------------------------------------------


class Client:
    """Blocking client of the Weave API.

    :param base_url: server URL, e.g. ``http://127.0.0.1:8000``; default ``$WEAVE_URL``.
    :param token: bearer token; default ``$WEAVE_TOKEN`` (``None``: send no token).
    :param namespace: namespace of every namespaced call; default ``$WEAVE_NAMESPACE``.
    :param timeout: seconds (or an ``httpx.Timeout``) for connect, write and each read.
    :param transport: an httpx transport to use instead of the network (tests, proxies).

    Use it as a context manager, or call ``close()``, to release connections.
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        namespace: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._settings = _Settings(base_url, token, namespace)
        self._http = httpx.Client(
            base_url=self._settings.base_url,
            headers=self._settings.headers(),
            timeout=timeout,
            transport=transport,
        )

    @property
    def base_url(self) -> str:
        return self._settings.base_url

    @property
    def namespace(self) -> str | None:
        return self._settings.namespace

    def _run(self, call: _Call[T]) -> T:
        try:
            response = self._http.request(
                call.method, call.path, content=call.content, headers=_request_headers(call),
                timeout=httpx.USE_CLIENT_DEFAULT if call.timeout is None else call.timeout,
            )
        except httpx.TransportError as exc:
            raise WeaveConnectionError(
                f"{call.method} {self.base_url}{call.path} failed: {exc!r}"
            ) from exc
        return call.read(response)

    def publish(self, definition: Workflow | Mapping[str, Any]) -> PublishResult:
        """Publish a definition version (``POST .../definitions``).

        Returns ``created=True`` for a new version, ``created=False`` when identical content
        is already published. Raises ``ConflictError`` when the version exists with other
        content, ``ValidationError`` (with ``.problems``) when the server refuses it.
        """
        return self._run(self._settings.publish(definition))

    def get_definition(self, definition_id: str, version: str = "latest") -> DefinitionVersion:
        """One published version with its document; ``"latest"`` is the newest version."""
        return self._run(self._settings.get_definition(definition_id, version))

    def list_definitions(self) -> list[DefinitionSummary]:
        """Every definition of the namespace, with its latest version and version count."""
        return self._run(self._settings.list_definitions())

    def list_versions(self, definition_id: str) -> list[VersionSummary]:
        """Every published version of a definition."""
        return self._run(self._settings.list_versions(definition_id))

    def health(self) -> Health:
        """Liveness and database reachability (needs no token)."""
        return self._run(self._settings.health())

    # --- workflows ---------------------------------------------------------------------

    def start(
        self,
        definition_id: str,
        input: Any,
        *,
        version: str = "latest",
        idempotency_key: str | None = None,
        operation_type: str | None = None,
    ) -> WorkflowHandle:
        """Start an instance of ``definition_id`` (``POST .../workflows``); return its handle.

        :param definition_id: the published definition to run.
        :param input: the instance input (JSON: ``int``/``Decimal``, never ``float``),
            checked by the server against the definition's ``input_schema``.
        :param version: an explicit version, or ``"latest"`` (resolved once and pinned).
        :param idempotency_key: the start is idempotent on (namespace, operation type, key):
            the same key with the same request returns the original instance
            (``handle.created is False``), with another request raises ``ConflictError``.
            When ``None`` a fresh ``uuid4`` key is generated, so every call starts a new
            instance; pass your own key to make retrying a start safe.
        :param operation_type: the idempotency scope (server default ``"start"``).
        :raises NotFoundError: no such definition or version.
        :raises ValidationError: the input breaks the input schema (``.problems``).
        :raises ConflictError: the key was used with a different request.
        """
        body = _start_body(definition_id, input, version, idempotency_key, operation_type)
        created, execution = self._run(self._settings.start(body))
        return WorkflowHandle(self, execution.workflow_id, started=execution, created=created)

    def get_workflow_handle(self, workflow_id: str) -> WorkflowHandle:
        """A handle on an existing instance (no request is made)."""
        _segment(workflow_id, "workflow_id")
        return WorkflowHandle(self, workflow_id)

    def get_workflow(self, workflow_id: str) -> WorkflowDescription:
        """One instance with its steps, activations, tasks and pending work."""
        return self._run(self._settings.get_workflow(workflow_id))

    def find_workflow(self, idempotency_key: str, *,
                      operation_type: str | None = None) -> WorkflowHandle | None:
        """The instance started with ``idempotency_key`` (your business key), or ``None``.

        :param operation_type: the idempotency scope of the start (server default
            ``"start"``).

        One indexed read (``GET .../workflows?idempotency_key=…``); the handle's
        ``started`` is the instance as listed.
        """
        query = _ListQuery(idempotency_key=_key(idempotency_key), operation_type=operation_type)
        page = self._run(self._settings.list_workflows(query, None, 1))
        if not page.items:
            return None
        found = page.items[0]
        return WorkflowHandle(self, found.workflow_id, started=found, created=False)

    def list_workflows_page(
        self,
        *,
        status: WorkflowStatus | str | None = None,
        definition_id: str | None = None,
        version: str | None = None,
        paused: bool | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> WorkflowPage:
        """One page of instances, newest first; pass ``next_cursor`` back as ``cursor``.

        Filters combine with AND; ``created_after`` is inclusive, ``created_before``
        exclusive (a naive ``datetime`` is UTC). ``limit`` is 1-500 (server default 50).
        """
        query = _ListQuery(status, definition_id, version, paused, created_after,
                           created_before)
        return self._run(self._settings.list_workflows(query, cursor, limit))

    def list_workflows(
        self,
        *,
        status: WorkflowStatus | str | None = None,
        definition_id: str | None = None,
        version: str | None = None,
        paused: bool | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        page_size: int | None = None,
    ) -> Iterator[WorkflowExecution]:
        """Every matching instance, newest first, fetching pages through the cursor lazily.

        Takes the filters of :meth:`list_workflows_page`; ``page_size`` is its ``limit``.
        """
        query = _ListQuery(status, definition_id, version, paused, created_after,
                           created_before)
        cursor: str | None = None
        while True:
            page = self._run(self._settings.list_workflows(query, cursor, page_size))
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def history_page(
        self, workflow_id: str, *, after: int = 0, limit: int | None = None
    ) -> HistoryPage:
        """Transitions with a revision above ``after``, in order (``limit`` 1-500, default 100)."""
        return self._run(self._settings.history(workflow_id, after, limit))

    def history(self, workflow_id: str, *, page_size: int | None = None) -> list[HistoryEvent]:
        """The whole history of an instance in revision order (every page)."""
        events: list[HistoryEvent] = []
        after = 0
        while True:
            page = self._run(self._settings.history(workflow_id, after, page_size))
            events.extend(page.items)
            if page.next_cursor is None:
                return events
            after = page.next_cursor

    def task_attempts(self, task_id: str) -> list[AttemptInfo]:
        """Every attempt of a task, in order (``weave_sdk.records``)."""
        from weave_sdk.records import attempts_call

        return self._run(attempts_call(self._settings.ns_path(""), task_id))

    def task_events(self, task_id: str) -> list[TaskEventInfo]:
        """Every event of a task, oldest first (``weave_sdk.records``)."""
        from weave_sdk.records import events_call

        return self._run(events_call(self._settings.ns_path(""), task_id))

    def history_task_events(self, workflow_id: str) -> list[HistoryTaskEvent]:
        """The lease expiries, retries and refused reports of the instance's tasks."""
        from weave_sdk.records import history_task_events

        return history_task_events(self, workflow_id)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClient:
    """Asyncio client of the Weave API; the same methods as ``Client``, awaited.

    :param base_url: server URL; default ``$WEAVE_URL``.
    :param token: bearer token; default ``$WEAVE_TOKEN``.
    :param namespace: namespace; default ``$WEAVE_NAMESPACE``.
    :param timeout: seconds (or an ``httpx.Timeout``).
    :param transport: an httpx async transport to use instead of the network.

    Use it as an async context manager, or await ``aclose()``.
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        namespace: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._settings = _Settings(base_url, token, namespace)
        self._http = httpx.AsyncClient(
            base_url=self._settings.base_url,
            headers=self._settings.headers(),
            timeout=timeout,
            transport=transport,
        )

    @property
    def base_url(self) -> str:
        return self._settings.base_url

    @property
    def namespace(self) -> str | None:
        return self._settings.namespace

    async def _run(self, call: _Call[T]) -> T:
        try:
            response = await self._http.request(
                call.method, call.path, content=call.content, headers=_request_headers(call),
                timeout=httpx.USE_CLIENT_DEFAULT if call.timeout is None else call.timeout,
            )
        except httpx.TransportError as exc:
            raise WeaveConnectionError(
                f"{call.method} {self.base_url}{call.path} failed: {exc!r}"
            ) from exc
        return call.read(response)

    async def publish(self, definition: Workflow | Mapping[str, Any]) -> PublishResult:
        """See ``Client.publish``."""
        return await self._run(self._settings.publish(definition))

    async def get_definition(
        self, definition_id: str, version: str = "latest"
    ) -> DefinitionVersion:
        """See ``Client.get_definition``."""
        return await self._run(self._settings.get_definition(definition_id, version))

    async def list_definitions(self) -> list[DefinitionSummary]:
        """See ``Client.list_definitions``."""
        return await self._run(self._settings.list_definitions())

    async def list_versions(self, definition_id: str) -> list[VersionSummary]:
        """See ``Client.list_versions``."""
        return await self._run(self._settings.list_versions(definition_id))

    async def health(self) -> Health:
        """See ``Client.health``."""
        return await self._run(self._settings.health())

    # --- workflows ---------------------------------------------------------------------

    async def start(
        self,
        definition_id: str,
        input: Any,
        *,
        version: str = "latest",
        idempotency_key: str | None = None,
        operation_type: str | None = None,
    ) -> AsyncWorkflowHandle:
        """See ``Client.start`` (a ``None`` key is a fresh ``uuid4``: no retry safety)."""
        body = _start_body(definition_id, input, version, idempotency_key, operation_type)
        created, execution = await self._run(self._settings.start(body))
        return AsyncWorkflowHandle(self, execution.workflow_id, started=execution,
                                   created=created)

    def get_workflow_handle(self, workflow_id: str) -> AsyncWorkflowHandle:
        """See ``Client.get_workflow_handle``."""
        _segment(workflow_id, "workflow_id")
        return AsyncWorkflowHandle(self, workflow_id)

    async def get_workflow(self, workflow_id: str) -> WorkflowDescription:
        """See ``Client.get_workflow``."""
        return await self._run(self._settings.get_workflow(workflow_id))

    async def find_workflow(self, idempotency_key: str, *,
                            operation_type: str | None = None) -> AsyncWorkflowHandle | None:
        """See ``Client.find_workflow``."""
        query = _ListQuery(idempotency_key=_key(idempotency_key), operation_type=operation_type)
        page = await self._run(self._settings.list_workflows(query, None, 1))
        if not page.items:
            return None
        found = page.items[0]
        return AsyncWorkflowHandle(self, found.workflow_id, started=found, created=False)

    async def list_workflows_page(
        self,
        *,
        status: WorkflowStatus | str | None = None,
        definition_id: str | None = None,
        version: str | None = None,
        paused: bool | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> WorkflowPage:
        """See ``Client.list_workflows_page``."""
        query = _ListQuery(status, definition_id, version, paused, created_after,
                           created_before)
        return await self._run(self._settings.list_workflows(query, cursor, limit))

    async def list_workflows(
        self,
        *,
        status: WorkflowStatus | str | None = None,
        definition_id: str | None = None,
        version: str | None = None,
        paused: bool | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        page_size: int | None = None,
    ) -> AsyncIterator[WorkflowExecution]:
        """See ``Client.list_workflows``; iterate with ``async for``."""
        query = _ListQuery(status, definition_id, version, paused, created_after,
                           created_before)
        cursor: str | None = None
        while True:
            page = await self._run(self._settings.list_workflows(query, cursor, page_size))
            for item in page.items:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def history_page(
        self, workflow_id: str, *, after: int = 0, limit: int | None = None
    ) -> HistoryPage:
        """See ``Client.history_page``."""
        return await self._run(self._settings.history(workflow_id, after, limit))

    async def history(
        self, workflow_id: str, *, page_size: int | None = None
    ) -> list[HistoryEvent]:
        """See ``Client.history``."""
        events: list[HistoryEvent] = []
        after = 0
        while True:
            page = await self._run(self._settings.history(workflow_id, after, page_size))
            events.extend(page.items)
            if page.next_cursor is None:
                return events
            after = page.next_cursor

    async def task_attempts(self, task_id: str) -> list[AttemptInfo]:
        """See ``Client.task_attempts``."""
        from weave_sdk.records import attempts_call

        return await self._run(attempts_call(self._settings.ns_path(""), task_id))

    async def task_events(self, task_id: str) -> list[TaskEventInfo]:
        """See ``Client.task_events``."""
        from weave_sdk.records import events_call

        return await self._run(events_call(self._settings.ns_path(""), task_id))

    async def history_task_events(self, workflow_id: str) -> list[HistoryTaskEvent]:
        """See ``Client.history_task_events``."""
        from weave_sdk.records import history_task_events_async

        return await history_task_events_async(self, workflow_id)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


__all__ = ["DEFAULT_TIMEOUT", "AsyncClient", "Client", "api_error"]
