"""What the engine recorded about tasks, from the SDK: attempts, events, and the task
events an instance's history shows (lease expiries, retries, refused reports).

``Client.task_attempts(task_id)`` / ``Client.task_events(task_id)`` (and the
``AsyncClient`` twins) call ``GET …/tasks/{id}/attempts`` and ``…/events`` (permission
``read``); ``Client.history_task_events(workflow_id)`` gathers ``task_events`` from every
page of ``GET …/workflows/{id}/history``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

from weave_sdk._answers import _items
from weave_sdk._calls import _Call, _segment
from weave_sdk.views import AttemptInfo, HistoryTaskEvent, TaskEventInfo

if TYPE_CHECKING:
    from weave_sdk.client import AsyncClient, Client

M = TypeVar("M", bound=BaseModel)


def _task_call(namespace_path: str, task_id: str, what: str, model: type[M]) -> _Call[list[M]]:
    path = f"{namespace_path}/tasks/{_segment(task_id, 'task_id')}/{what}"
    return _Call("GET", path, lambda response: _items(response, model))


def attempts_call(namespace_path: str, task_id: str) -> _Call[list[AttemptInfo]]:
    return _task_call(namespace_path, task_id, "attempts", AttemptInfo)


def events_call(namespace_path: str, task_id: str) -> _Call[list[TaskEventInfo]]:
    return _task_call(namespace_path, task_id, "events", TaskEventInfo)


def history_task_events(client: Client, workflow_id: str) -> list[HistoryTaskEvent]:
    """Every page's ``task_events``, in the order the history shows them."""
    found: list[HistoryTaskEvent] = []
    after = 0
    while True:
        page = client.history_page(workflow_id, after=after)
        found.extend(page.task_events)
        if page.next_cursor is None:
            return found
        after = page.next_cursor


async def history_task_events_async(client: AsyncClient,
                                    workflow_id: str) -> list[HistoryTaskEvent]:
    """:func:`history_task_events` for the ``AsyncClient``."""
    found: list[HistoryTaskEvent] = []
    after = 0
    while True:
        page = await client.history_page(workflow_id, after=after)
        found.extend(page.task_events)
        if page.next_cursor is None:
            return found
        after = page.next_cursor


__all__ = ["attempts_call", "events_call", "history_task_events", "history_task_events_async"]
