"""What dispatch recorded about one task, read back (R-10.2): its attempts and its events.

Separate from ``routes/tasks.py`` (the worker protocol's hot path): these are reads for
people and tools, each one read transaction in the thread pool.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from weave_core.access.identity import Permission
from weave_core.runtime.task_records import task_attempts, task_events
from weave_http.models import (
    AttemptList,
    AttemptModel,
    TaskEventList,
    TaskEventModel,
    json_response,
)
from weave_http.routes import ApiRoute, Context

TASK = "/v1/namespaces/{ns}/tasks/{task_id}"


async def attempts(request: Request, ctx: Context) -> Response:
    _, namespace = ctx.require_principal()
    rows = await run_in_threadpool(task_attempts, ctx.engine.db, namespace,
                                   str(request.path_params["task_id"]))
    return json_response(AttemptList(items=[AttemptModel(**r) for r in rows]))


async def events(request: Request, ctx: Context) -> Response:
    _, namespace = ctx.require_principal()
    rows = await run_in_threadpool(task_events, ctx.engine.db, namespace,
                                   str(request.path_params["task_id"]))
    return json_response(TaskEventList(items=[TaskEventModel(**r) for r in rows]))


API_ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute("GET", TASK + "/attempts", attempts, "listTaskAttempts",
             "Every attempt of a task: worker, claimed/started times, lease, last heartbeat, "
             "outcome, error, reported time", Permission.READ,
             {200: (AttemptList, "attempts in attempt order")}, tags=("tasks",)),
    ApiRoute("GET", TASK + "/events", events, "listTaskEvents",
             "Every event of a task: created, started, retry scheduled, report refused, "
             "cancel requested, settled", Permission.READ,
             {200: (TaskEventList, "events oldest first")}, tags=("tasks",)),
)

__all__ = ["API_ROUTES"]
