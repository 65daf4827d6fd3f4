"""Dispatch on the wire: tasks, the worker protocol (claim, heartbeat, complete), queues, quotas,
handlers seen."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from weave_http.models.base import AnyJson, ApiModel, UtcDatetime


class HandlerDecl(ApiModel):
    """A handler a worker runs: name and version."""

    name: str = Field(min_length=1, max_length=128)
    version: str = Field(min_length=1, max_length=128)


class ClaimRequest(ApiModel):
    """Long poll for up to ``max_tasks`` tasks of the declared handlers."""

    worker_id: str = Field(min_length=1, max_length=255)
    handlers: list[HandlerDecl] = Field(min_length=1, max_length=256)
    max_tasks: int = Field(default=1, ge=1, le=32)
    wait_seconds: float = Field(default=0, ge=0, le=30)


class ClaimedTaskModel(ApiModel):
    """A task handed to a worker under one attempt and its lease."""

    task_id: str
    attempt_id: str
    attempt_no: int
    handler: str
    handler_version: str
    input: AnyJson
    lease_expires_at: UtcDatetime
    heartbeat_timeout: int = Field(description="lease length in seconds; heartbeat well within")
    deadline_at: UtcDatetime | None
    cancel_requested: bool
    traceparent: str | None = Field(
        default=None, exclude_if=lambda value: value is None,
        description="W3C trace context of the task's step trace, present only when the "
        "server traces (OpenTelemetry): run the handler in a span under it")


class ClaimResponse(ApiModel):
    tasks: list[ClaimedTaskModel]


class HeartbeatRequest(ApiModel):
    attempt_id: str = Field(min_length=1, max_length=64)


class HeartbeatResponse(ApiModel):
    lease_expires_at: UtcDatetime
    cancel_requested: bool


class TaskErrorModel(ApiModel):
    """A typed failure: ``retryable`` decides whether the task is retried."""

    type: str = Field(min_length=1, max_length=128)
    message: str = Field(max_length=4096)
    retryable: bool = False
    details: AnyJson = None


class ClaimNext(ApiModel):
    """Claim the worker's next tasks in the same request (no waiting)."""

    worker_id: str = Field(min_length=1, max_length=255)
    handlers: list[HandlerDecl] = Field(min_length=1, max_length=256)
    max_tasks: int = Field(default=1, ge=1, le=32)


class CompleteRequest(ApiModel):
    """The result of one attempt."""

    attempt_id: str = Field(min_length=1, max_length=64)
    outcome: Literal["succeeded", "failed", "cancelled"]
    output: AnyJson = None
    error: TaskErrorModel | None = None
    claim_next: ClaimNext | None = None


class TaskModel(ApiModel):
    """A dispatch task as the API shows it."""

    task_id: str
    queue: str
    status: Literal["PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "NEEDS_REVIEW"]
    revision: int
    owner_kind: str
    owner_id: str | None
    handler: str
    handler_version: str
    idempotent: bool
    attempts_used: int
    max_attempts: int
    available_at: UtcDatetime
    deadline_at: UtcDatetime | None
    effect_unknown: bool
    cancel_requested: bool
    current_attempt_id: str | None
    result: AnyJson
    error: AnyJson
    created_at: UtcDatetime
    updated_at: UtcDatetime


class CompleteResponse(ApiModel):
    task: TaskModel
    replay: bool = Field(description="true when this exact report was already taken")
    next_tasks: list[ClaimedTaskModel]


class CreateTaskRequest(ApiModel):
    """A standalone task (workflow tasks are created by the runtime)."""

    queue: str = Field(min_length=1, max_length=128)
    handler: str = Field(min_length=1, max_length=128)
    handler_version: str = Field(default="1", min_length=1, max_length=128)
    idempotent: bool = True
    input: AnyJson = None
    max_attempts: int = Field(default=3, ge=1)
    backoff_seconds: float = Field(default=1, ge=0, le=86400)
    backoff_multiplier: float = Field(default=2, ge=1, le=100)
    max_backoff_seconds: float = Field(default=300, ge=0, le=86400)
    schedule_to_start_seconds: int | None = Field(default=None, ge=1)
    start_to_close_seconds: int | None = Field(default=None, ge=1)
    heartbeat_timeout_seconds: int | None = Field(default=None, ge=1)
    deadline_seconds: int | None = Field(default=None, ge=1)


class CancelTaskRequest(ApiModel):
    reason: str | None = Field(default=None, max_length=1024)


class QueueCapacityRequest(ApiModel):
    capacity: int = Field(ge=0, le=10_000_000)


class QueueWorker(ApiModel):
    """A worker that asked for a handler version on this queue in a claim request."""

    handler: str
    handler_version: str
    worker_id: str
    last_seen_at: UtcDatetime = Field(description="database time of the last sighting "
                                      "written (a process writes at most every 5 s)")


class QueueModel(ApiModel):
    name: str
    capacity: int
    outstanding: int


class QueueDetail(QueueModel):
    """A queue with the workers seen asking for its handlers (``GET …/queues/{queue}``)."""

    workers: list[QueueWorker] = Field(
        description="workers and the handlers they asked for, most recently seen first")


class QuotaRequest(ApiModel):
    task_quota: int = Field(ge=0, le=10_000_000)


class QuotaModel(ApiModel):
    task_quota: int
    outstanding: int


class SeenHandler(ApiModel):
    """A handler a worker declared in a claim to this engine process."""

    queue: str
    handler: str
    handler_version: str
    worker_id: str = Field(description="the last worker seen declaring it")


class SeenHandlerList(ApiModel):
    """Handlers workers have claimed with, on this engine process since it started."""

    items: list[SeenHandler]


__all__ = [
    "CancelTaskRequest",
    "ClaimNext",
    "ClaimRequest",
    "ClaimResponse",
    "ClaimedTaskModel",
    "CompleteRequest",
    "CompleteResponse",
    "CreateTaskRequest",
    "HandlerDecl",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "QueueCapacityRequest",
    "QueueDetail",
    "QueueModel",
    "QueueWorker",
    "QuotaModel",
    "QuotaRequest",
    "SeenHandler",
    "SeenHandlerList",
    "TaskErrorModel",
    "TaskModel",
]
