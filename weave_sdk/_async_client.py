"""``AsyncClient``: the asyncio transport of the calls ``weave_sdk._calls`` describes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
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
    AsyncWorkflowHandle,
    HistoryEvent,
    HistoryPage,
    WorkflowDescription,
    WorkflowExecution,
    WorkflowPage,
    WorkflowStatus,
)

T = TypeVar("T")


class AsyncClient(_Transport):
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

    async def _run(self, call: _Call[T]) -> T:
        try:
            response = await self._http.request(
                call.method, call.path, content=call.content, headers=_request_headers(call),
                timeout=httpx.USE_CLIENT_DEFAULT if call.timeout is None else call.timeout,
            )
        except httpx.TransportError as exc:
            raise _failed(call, self.base_url, exc) from exc
        return call.read(response)

    async def _drive(self, plan: Plan[T]) -> T:
        answer: Any = None
        try:
            while True:
                answer = await self._run(plan.send(answer))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]  # a generator's return value

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
        found = await self._drive(find_plan(self._settings, idempotency_key, operation_type))
        if found is None:
            return None
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
        call = next_page(self._settings, query, page_size, None)
        while call is not None:
            page = await self._run(call)
            for item in page.items:
                yield item
            call = next_page(self._settings, query, page_size, page)

    async def history_page(
        self, workflow_id: str, *, after: int = 0, limit: int | None = None
    ) -> HistoryPage:
        """See ``Client.history_page``."""
        return await self._run(self._settings.history(workflow_id, after, limit))

    async def history(
        self, workflow_id: str, *, page_size: int | None = None
    ) -> list[HistoryEvent]:
        """See ``Client.history``."""
        return await self._drive(history_plan(self._settings, workflow_id, page_size))

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
