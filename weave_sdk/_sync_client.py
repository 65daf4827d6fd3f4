"""``Client``: the blocking transport of the calls ``weave_sdk._calls`` describes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

import httpx

from weave_sdk._calls import (
    DEFAULT_TIMEOUT,
    Plan,
    _Call,
    _failed,
    _ListQuery,
    _request_headers,
    _segment,
    _Settings,
    _start_body,
    _Transport,
    find_plan,
    history_plan,
    next_page,
)
from weave_sdk.definition import Workflow
from weave_sdk.models import (
    DefinitionSummary,
    DefinitionVersion,
    Health,
    PublishResult,
    VersionSummary,
)
from weave_sdk.views import AttemptInfo, HistoryTaskEvent, TaskEventInfo
from weave_sdk.workflows import (
    HistoryEvent,
    HistoryPage,
    WorkflowDescription,
    WorkflowExecution,
    WorkflowHandle,
    WorkflowPage,
    WorkflowStatus,
)

T = TypeVar("T")


class Client(_Transport):
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

    def _run(self, call: _Call[T]) -> T:
        try:
            response = self._http.request(
                call.method, call.path, content=call.content, headers=_request_headers(call),
                timeout=httpx.USE_CLIENT_DEFAULT if call.timeout is None else call.timeout,
            )
        except httpx.TransportError as exc:
            raise _failed(call, self.base_url, exc) from exc
        return call.read(response)

    def _drive(self, plan: Plan[T]) -> T:
        answer: Any = None
        try:
            while True:
                answer = self._run(plan.send(answer))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]  # a generator's return value

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
        found = self._drive(find_plan(self._settings, idempotency_key, operation_type))
        if found is None:
            return None
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
        call = next_page(self._settings, query, page_size, None)
        while call is not None:
            page = self._run(call)
            yield from page.items
            call = next_page(self._settings, query, page_size, page)

    def history_page(
        self, workflow_id: str, *, after: int = 0, limit: int | None = None
    ) -> HistoryPage:
        """Transitions with a revision above ``after``, in order (``limit`` 1-500, default 100)."""
        return self._run(self._settings.history(workflow_id, after, limit))

    def history(self, workflow_id: str, *, page_size: int | None = None) -> list[HistoryEvent]:
        """The whole history of an instance in revision order (every page)."""
        return self._drive(history_plan(self._settings, workflow_id, page_size))

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
