"""Task dispatch routes: the worker protocol (claim, heartbeat, complete), standalone tasks,
and queue capacity / namespace quota administration. See docs/worker-protocol.md.

Database work runs in the thread pool; the claim long poll waits on the event loop (woken
in-process by ``weave_core.dispatch.wakeup``), holding no connection while it waits.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from decimal import Decimal

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from weave_core.access.identity import Permission
from weave_core.dispatch import (
    ClaimedTask,
    HandlerRef,
    Report,
    ReportOutcome,
    TaskError,
    TaskSpec,
    TaskView,
    cancel_task,
    claim_wait,
    create_task,
    get_queue,
    get_quota,
    get_task,
    heartbeat,
    set_namespace_quota,
    set_queue_capacity,
)
from weave_core.dispatch.sightings import seen_in_queue
from weave_core.foundation.errors import Problem, ValidationError
from weave_core.observability import tracing
from weave_core.runtime.step import ClaimNext, complete_step
from weave_http.body import read_json, validate_model
from weave_http.disconnect import unless_disconnected
from weave_http.models import (
    CancelTaskRequest,
    ClaimedTaskModel,
    ClaimRequest,
    ClaimResponse,
    CompleteRequest,
    CompleteResponse,
    CreateTaskRequest,
    HandlerDecl,
    HeartbeatRequest,
    HeartbeatResponse,
    QueueCapacityRequest,
    QueueDetail,
    QueueModel,
    QueueWorker,
    QuotaModel,
    QuotaRequest,
    TaskModel,
    json_response,
)
from weave_http.routes import ApiRoute, Context
from weave_http.routes.handlers import note_claim
from weave_http.threads import in_thread

logger = logging.getLogger(__name__)

QUEUE = "/v1/namespaces/{ns}/queues/{queue}"
CLAIM = QUEUE + "/claim"
TASKS = "/v1/namespaces/{ns}/tasks"
TASK = TASKS + "/{task_id}"
QUOTA = "/v1/namespaces/{ns}/quota"


def _handlers(decls: list[HandlerDecl]) -> list[HandlerRef]:
    return [HandlerRef(d.name, d.version) for d in decls]


def claimed_model(task: ClaimedTask) -> ClaimedTaskModel:
    return ClaimedTaskModel(
        task_id=task.task_id, attempt_id=task.attempt_id, attempt_no=task.attempt_no,
        handler=task.handler, handler_version=task.handler_version, input=task.input,
        lease_expires_at=task.lease_expires_at, heartbeat_timeout=task.heartbeat_timeout,
        deadline_at=task.deadline_at, cancel_requested=task.cancel_requested,
        traceparent=tracing.claimed(task.task_id, task.attempt_id),  # None: not tracing
    )


def task_model(task: TaskView) -> TaskModel:
    return TaskModel(
        task_id=task.task_id, queue=task.queue, status=task.status.value,
        revision=task.revision, owner_kind=task.owner_kind, owner_id=task.owner_id,
        handler=task.handler, handler_version=task.handler_version,
        idempotent=task.idempotent, attempts_used=task.attempts_used,
        max_attempts=task.max_attempts, available_at=task.available_at,
        deadline_at=task.deadline_at, effect_unknown=task.effect_unknown,
        cancel_requested=task.cancel_requested, current_attempt_id=task.current_attempt_id,
        result=task.result, error=task.error, created_at=task.created_at,
        updated_at=task.updated_at,
    )


async def claim_tasks(request: Request, ctx: Context) -> Response:
    principal, namespace = ctx.require_principal()
    engine = ctx.engine
    body = validate_model(ClaimRequest, await read_json(request, engine.limits))
    note_claim(request, namespace, str(request.path_params["queue"]), body.worker_id,
               [(d.name, d.version) for d in body.handlers])  # a dict write (routes.handlers)
    tasks = await unless_disconnected(request, claim_wait(
        engine.db, namespace=namespace, queue=str(request.path_params["queue"]),
        worker_id=body.worker_id, handlers=_handlers(body.handlers), max_tasks=body.max_tasks,
        wait_seconds=body.wait_seconds, actor=principal.actor, limits=engine.limits,
    ), [])
    return json_response(ClaimResponse(tasks=[claimed_model(t) for t in tasks]))


async def heartbeat_task(request: Request, ctx: Context) -> Response:
    principal, namespace = ctx.require_principal()
    engine = ctx.engine
    body = validate_model(HeartbeatRequest, await read_json(request, engine.limits))
    beat = await run_in_threadpool(
        lambda: heartbeat(engine.db, namespace=namespace,
                          task_id=str(request.path_params["task_id"]),
                          attempt_id=body.attempt_id, actor=principal.actor,
                          limits=engine.limits)
    )
    return json_response(HeartbeatResponse(lease_expires_at=beat.lease_expires_at,
                                           cancel_requested=beat.cancel_requested))


async def complete_task(request: Request, ctx: Context) -> Response:
    principal, namespace = ctx.require_principal()
    engine = ctx.engine
    body = validate_model(CompleteRequest, await read_json(request, engine.limits))
    error = None
    if body.error is not None:
        error = TaskError(body.error.type, body.error.message, body.error.retryable,
                          body.error.details)
    report = Report(ReportOutcome(body.outcome), output=body.output, error=error)
    task_id = str(request.path_params["task_id"])
    nxt = body.claim_next
    claim_next = None if nxt is None else ClaimNext(nxt.worker_id, _handlers(nxt.handlers),
                                                     nxt.max_tasks)
    with tracing.task_span(task_id, "weave.task.complete", {"weave.outcome": body.outcome}):
        done = await in_thread(
            lambda: complete_step(engine, namespace=namespace, task_id=task_id,
                                  attempt_id=body.attempt_id, report=report,
                                  actor=principal.actor, claim_next=claim_next))
    if nxt is not None:  # a worker that only ever takes its work this way is seen too
        note_claim(request, namespace, str(done.completion.task.queue), nxt.worker_id,
                   [(d.name, d.version) for d in nxt.handlers])
    return json_response(CompleteResponse(
        task=task_model(done.completion.task), replay=done.completion.replay,
        next_tasks=[claimed_model(t) for t in done.next_tasks],
    ))


def _seconds_ms(value: float) -> int:
    return int(Decimal(str(value)) * 1000)


async def create_standalone_task(request: Request, ctx: Context) -> Response:
    principal, namespace = ctx.require_principal()
    engine = ctx.engine
    body = validate_model(CreateTaskRequest, await read_json(request, engine.limits))

    def _run() -> TaskView:
        deadline = None
        if body.deadline_seconds is not None:
            longest = engine.limits.max_deadline_seconds
            if body.deadline_seconds > longest:  # before the date arithmetic can overflow
                raise ValidationError("invalid task", [Problem(
                    "$.deadline_seconds", "out_of_range",
                    f"deadline_seconds must be 1..{longest} seconds")])
            now = engine.db.read(engine.db.now)
            deadline = now + timedelta(seconds=body.deadline_seconds)
        spec = TaskSpec(
            queue=body.queue, handler=body.handler, handler_version=body.handler_version,
            idempotent=body.idempotent, input=body.input, max_attempts=body.max_attempts,
            backoff_ms=_seconds_ms(body.backoff_seconds),
            backoff_multiplier_milli=_seconds_ms(body.backoff_multiplier),
            max_backoff_ms=_seconds_ms(body.max_backoff_seconds),
            schedule_to_start_s=body.schedule_to_start_seconds,
            start_to_close_s=body.start_to_close_seconds,
            heartbeat_timeout_s=body.heartbeat_timeout_seconds, deadline_at=deadline,
        )
        return create_task(engine.db, namespace=namespace, spec=spec, actor=principal.actor,
                           limits=engine.limits)

    return json_response(task_model(await run_in_threadpool(_run)), 201)


async def read_task(request: Request, ctx: Context) -> Response:
    _, namespace = ctx.require_principal()
    task = await run_in_threadpool(get_task, ctx.engine.db, namespace,
                                   str(request.path_params["task_id"]))
    return json_response(task_model(task))


async def cancel_standalone_task(request: Request, ctx: Context) -> Response:
    principal, namespace = ctx.require_principal()
    engine = ctx.engine
    body = validate_model(CancelTaskRequest, await read_json(request, engine.limits))
    task = await run_in_threadpool(
        lambda: cancel_task(engine.db, namespace=namespace,
                            task_id=str(request.path_params["task_id"]),
                            actor=principal.actor, reason=body.reason, limits=engine.limits)
    )
    return json_response(task_model(task))


async def put_queue(request: Request, ctx: Context) -> Response:
    principal, namespace = ctx.require_principal()
    engine = ctx.engine
    body = validate_model(QueueCapacityRequest, await read_json(request, engine.limits))
    state = await run_in_threadpool(
        lambda: set_queue_capacity(engine.db, namespace, str(request.path_params["queue"]),
                                   body.capacity, actor=principal.actor)
    )
    return json_response(QueueModel(name=state.name, capacity=state.capacity,
                                    outstanding=state.outstanding))


async def read_queue(request: Request, ctx: Context) -> Response:
    _, namespace = ctx.require_principal()
    db = ctx.engine.db
    queue = str(request.path_params["queue"])
    state, seen = await run_in_threadpool(lambda: db.read(
        lambda c: (get_queue(c, namespace, queue), seen_in_queue(c, namespace, queue))))
    return json_response(QueueDetail(name=state.name, capacity=state.capacity,
                                     outstanding=state.outstanding,
                                     workers=[QueueWorker(**w) for w in seen]))


async def put_quota(request: Request, ctx: Context) -> Response:
    principal, namespace = ctx.require_principal()
    engine = ctx.engine
    body = validate_model(QuotaRequest, await read_json(request, engine.limits))
    state = await run_in_threadpool(
        lambda: set_namespace_quota(engine.db, namespace, body.task_quota, actor=principal.actor)
    )
    return json_response(QuotaModel(task_quota=state.task_quota, outstanding=state.outstanding))


async def read_quota(request: Request, ctx: Context) -> Response:
    _, namespace = ctx.require_principal()
    db = ctx.engine.db
    state = await run_in_threadpool(lambda: db.read(lambda c: get_quota(c, namespace)))
    return json_response(QuotaModel(task_quota=state.task_quota, outstanding=state.outstanding))


_TAGS = ("tasks",)

API_ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute("POST", CLAIM, claim_tasks, "claimTasks",
             "Long-poll for tasks of the declared handlers (worker protocol)", Permission.WORK,
             {200: (ClaimResponse, "0..max_tasks tasks, each with an attempt and a lease")},
             errors=(400, 413, 415, 422), request_model=ClaimRequest, tags=_TAGS),
    ApiRoute("POST", TASK + "/heartbeat", heartbeat_task, "heartbeatTask",
             "Renew an attempt's lease; learn whether cancellation was requested",
             Permission.WORK, {200: (HeartbeatResponse, "lease renewed")},
             errors=(400, 409, 415, 422), request_model=HeartbeatRequest, tags=_TAGS),
    ApiRoute("POST", TASK + "/complete", complete_task, "completeTask",
             "Report an attempt's result (optionally claim the next tasks)", Permission.WORK,
             {200: (CompleteResponse, "result taken, or the same report replayed")},
             errors=(400, 409, 413, 415, 422), request_model=CompleteRequest, tags=_TAGS),
    ApiRoute("POST", TASKS, create_standalone_task, "createTask",
             "Create a standalone task", Permission.WORK, {201: (TaskModel, "task created")},
             errors=(400, 413, 415, 422, 429), request_model=CreateTaskRequest, tags=_TAGS),
    ApiRoute("GET", TASK, read_task, "getTask", "Read one task", Permission.READ,
             {200: (TaskModel, "the task")}, tags=_TAGS),
    ApiRoute("POST", TASK + "/cancel", cancel_standalone_task, "cancelTask",
             "Cancel a standalone task (running: requested, seen on heartbeat)",
             Permission.WORK, {200: (TaskModel, "the task after the request")},
             errors=(400, 415, 422), request_model=CancelTaskRequest, tags=_TAGS),
    ApiRoute("PUT", QUEUE, put_queue, "setQueueCapacity", "Set a queue's capacity",
             Permission.ADMIN, {200: (QueueModel, "the queue")},
             errors=(400, 415, 422), request_model=QueueCapacityRequest, tags=_TAGS),
    ApiRoute("GET", QUEUE, read_queue, "getQueue", "Read a queue's capacity and usage",
             Permission.READ, {200: (QueueDetail, "the queue and the workers seen")},
             tags=_TAGS),
    ApiRoute("PUT", QUOTA, put_quota, "setNamespaceQuota",
             "Set the namespace's quota of outstanding tasks", Permission.ADMIN,
             {200: (QuotaModel, "the quota")}, errors=(400, 415, 422),
             request_model=QuotaRequest, tags=_TAGS),
    ApiRoute("GET", QUOTA, read_quota, "getNamespaceQuota",
             "Read the namespace's task quota and usage", Permission.READ,
             {200: (QuotaModel, "the quota")}, tags=_TAGS),
)

__all__ = ["API_ROUTES", "claimed_model", "task_model"]
