"""The wire shapes of the API as pydantic models, and how a response is written.

The models are the single source of the OpenAPI schemas (``weave_http.openapi``) and of
every JSON response body. Bodies are written with :func:`weave_core.foundation.exactjson.dumps`, so
numbers inside documents stay exact (``1e400``, ``2**64``); datetimes are RFC 3339 UTC
with microseconds and ``Z`` (``2025-01-31T12:00:00.000000Z``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, WithJsonSchema
from starlette.responses import Response

from weave_core.foundation import exactjson

JSON_MEDIA_TYPE = "application/json"


def rfc3339(value: datetime) -> str:
    """RFC 3339 UTC with microseconds and ``Z``; a naive datetime is taken as UTC.

    The database layer returns naive UTC datetimes (the session time zone is pinned).
    """
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


UtcDatetime = Annotated[
    datetime,
    PlainSerializer(rfc3339, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time",
                    "examples": ["2025-01-31T12:00:00.000000Z"]}),
]
"""A datetime written as RFC 3339 UTC with microseconds and ``Z``."""

JsonObject = Annotated[
    dict[str, Any],
    WithJsonSchema({"type": "object", "additionalProperties": True}),
]


class ApiModel(BaseModel):
    """Base of every wire model: unknown fields refused on input, frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --- health --------------------------------------------------------------------------


class HealthResponse(ApiModel):
    """The server is up and its database answers."""

    status: Literal["ok"] = "ok"
    database: Literal["reachable"] = "reachable"
    dialect: Literal["mysql", "sqlite"]
    node_id: str
    version: str


# --- definitions ---------------------------------------------------------------------


class DefinitionDocument(BaseModel):
    """A definition document, schema_version 1 (see docs/definitions.md).

    Only the envelope is described here; the server validates the whole document on
    publish and reports every problem at once (422).
    """

    model_config = ConfigDict(extra="allow", title="DefinitionDocument")

    schema_version: Literal[1]
    definition_id: str
    version: str
    steps: list[JsonObject]


class DefinitionVersion(ApiModel):
    """One published, immutable version with its canonical document."""

    definition_id: str
    version: str
    content_hash: str = Field(description="SHA-256 (hex) of the canonical document")
    published_at: UtcDatetime
    document: JsonObject


class PublishResponse(ApiModel):
    """The outcome of a publish: ``created`` is false for an identical re-publish (200)."""

    definition_id: str
    version: str
    content_hash: str
    published_at: UtcDatetime
    created: bool
    document: JsonObject


class DefinitionSummary(ApiModel):
    definition_id: str
    latest_version: str
    versions: int = Field(description="how many versions are published")


class DefinitionList(ApiModel):
    items: list[DefinitionSummary]


class VersionSummary(ApiModel):
    version: str
    content_hash: str
    published_at: UtcDatetime


class DefinitionVersions(ApiModel):
    """Every version of one definition, oldest first."""

    definition_id: str
    latest_version: str
    items: list[VersionSummary]


# --- errors --------------------------------------------------------------------------


class ProblemItem(ApiModel):
    """One problem found in a document: JSON path, stable code, message."""

    path: str
    code: str
    message: str


class ProblemDetails(BaseModel):
    """``application/problem+json`` (RFC 9457); ``code`` is the stable contract.

    Error-specific members (for example ``problems`` on ``validation_failed``) appear at
    the top level beside these.
    """

    model_config = ConfigDict(extra="allow", title="ProblemDetails")

    type: str = Field(examples=["https://weave.dev/problems/not_found"])
    title: str
    status: int
    code: str
    detail: str
    instance: str | None = None
    problems: list[ProblemItem] | None = Field(
        default=None, description="every problem found (validation_failed only)"
    )


# --- dispatch: tasks and the worker protocol ----------------------------------------

AnyJson = Annotated[Any, WithJsonSchema({"description": "any JSON value (numbers exact)"})]
"""Any JSON value; numbers stay exact (int / Decimal)."""


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


# --- workflows (issue 5): start and reads ------------------------------------------


class StartWorkflowRequest(ApiModel):
    """Start an instance (idempotent on namespace, operation_type and idempotency_key)."""

    definition_id: str = Field(min_length=1, max_length=128)
    version: str = Field(default="latest", min_length=1, max_length=128,
                         description="an explicit version, or 'latest' (pinned at start)")
    input: AnyJson = None
    idempotency_key: str = Field(min_length=1, max_length=255)
    operation_type: str = Field(default="start", min_length=1, max_length=64)


class WorkflowModel(ApiModel):
    """One instance: pinned version, status, paused flag, revision, deadline, output."""

    workflow_id: str
    namespace: str
    definition_id: str
    version: str
    status: Literal["RUNNING", "WAITING", "CANCELLING", "NEEDS_REVIEW", "SUCCEEDED",
                    "FAILED", "CANCELLED"]
    paused: bool
    control_version: int
    revision: int
    input: AnyJson
    output: AnyJson
    review_reason: str | None
    failure_policy: str
    deadline_at: str
    operation_type: str
    idempotency_key: str
    created_by: str
    created_at: str
    updated_at: str
    settled_at: str | None


class WorkflowResult(ApiModel):
    """An instance's outcome (the long poll of ``GET …/result``): ``done`` once it is
    SUCCEEDED, FAILED, CANCELLED or NEEDS_REVIEW."""

    workflow_id: str
    status: Literal["RUNNING", "WAITING", "CANCELLING", "NEEDS_REVIEW", "SUCCEEDED",
                    "FAILED", "CANCELLED"]
    done: bool
    paused: bool
    revision: int
    output: AnyJson
    review_reason: str | None
    settled_at: str | None
    updated_at: str


class WorkflowDetail(WorkflowModel):
    """One instance with its steps, activations, tasks and pending (due) work."""

    steps: list[JsonObject]
    activations: list[JsonObject]
    tasks: list[JsonObject]
    pending: list[JsonObject]
    operations: list[JsonObject] = Field(
        default_factory=list,
        description="control and review operations, oldest first, with their operators")
    cancel_requested: bool = Field(default=False, description="a cancel was accepted")
    review: JsonObject | None = Field(
        default=None,
        description="reason, blocking_steps, unknown_effects (with their conclusions)")
    waits: list[JsonObject] = Field(default_factory=list,
                                    description="wait records: state, version, winner (issue 6)")
    signals: list[JsonObject] = Field(default_factory=list,
                                      description="accepted signals: ACCEPTED, CONSUMED, LOST "
                                      "or EXPIRED, and the activation that consumed each")
    poll_rounds: list[JsonObject] = Field(default_factory=list,
                                          description="poll rounds: one task each")
    wait_reasons: list[JsonObject] = Field(
        default_factory=list,
        description="why pending work waits: handler_unavailable (no worker asked for the "
        "task's queue, handler and version within window_seconds)")
    config: JsonObject | None = Field(
        default=None,
        description="the effective configuration frozen when the instance was accepted: "
        "limits, the values steps took from defaults, resolved defaults (null for "
        "instances started before it was recorded)")


class WorkflowList(ApiModel):
    """Instances newest first; pass ``next_cursor`` back as ``cursor`` for the next page."""

    items: list[WorkflowModel]
    next_cursor: str | None


class WorkflowHistory(ApiModel):
    """Transitions in revision order, each with the audit entry of its transaction."""

    items: list[JsonObject]
    next_cursor: int | None = Field(description="pass back as 'after' for the next page")
    task_events: list[JsonObject] = Field(
        default_factory=list,
        description="task events of this page's stretch of time that are no transition: "
        "lease expiries, scheduled retries, refused reports (kind, step_id, task_id, ...)")



# --- controls, review and recovery (issue 7) ----------------------------------------


class ControlRequestModel(ApiModel):
    """Pause, resume or cancel: the version you saw, a stable operation id, a reason."""

    expected_control_version: int = Field(ge=0, description="the instance's control_version "
                                          "as last read; stale → 409 control_version_conflict")
    operation_id: str = Field(min_length=1, max_length=64, description=(
        "stable id of this operation: a repeat returns the first outcome"))
    reason: str = Field(min_length=1, max_length=1024)


class ReviewRequestModel(ApiModel):
    """One review action: ``conclude`` (step_id, conclusion, evidence), ``resolve``
    (outcome), ``recover`` (step_id, expected_state_version, optional conclusion), or
    ``accept`` (step_id, expected_state_version, output, evidence: a reviewed result)."""

    action: Literal["conclude", "resolve", "recover", "accept"]
    operation_id: str = Field(min_length=1, max_length=64)
    reason: str = Field(min_length=1, max_length=1024)
    step_id: str | None = Field(default=None, min_length=1, max_length=128)
    expected_state_version: int | None = Field(default=None, ge=0)
    conclusion: Literal["effect_confirmed_absent", "retry_safe", "effect_confirmed_present",
                        "effect_unknown"] | None = None
    evidence: JsonObject | None = None
    outcome: Literal["continue", "failed", "cancelled"] = "continue"
    output: Any = Field(default=None, description="accept: the output the reviewer observed "
                        "(checked against the step's output contract)")


class ReviewResponse(ApiModel):
    """The instance after the action, and the operation as recorded."""

    workflow: WorkflowModel
    operation: JsonObject

class SeenHandler(ApiModel):
    """A handler a worker declared in a claim to this engine process."""

    queue: str
    handler: str
    handler_version: str
    worker_id: str = Field(description="the last worker seen declaring it")


class SeenHandlerList(ApiModel):
    """Handlers workers have claimed with, on this engine process since it started."""

    items: list[SeenHandler]


def json_response(model: BaseModel, status_code: int = 200) -> Response:
    """A response whose body is ``model`` written as exact, canonical JSON."""
    return Response(
        exactjson.dumps(model.model_dump(mode="python")),
        status_code=status_code,
        media_type=JSON_MEDIA_TYPE,
    )


RESPONSE_MODELS: tuple[type[BaseModel], ...] = (
    SeenHandlerList,
    ReviewResponse,
    WorkflowModel,
    WorkflowDetail,
    WorkflowList,
    WorkflowHistory,
    WorkflowResult,
    HealthResponse,
    DefinitionVersion,
    PublishResponse,
    DefinitionList,
    DefinitionVersions,
    ProblemDetails,
    ClaimResponse,
    HeartbeatResponse,
    CompleteResponse,
    TaskModel,
    QueueModel,
    QueueDetail,
    QuotaModel,
)
REQUEST_MODELS: tuple[type[BaseModel], ...] = (
    ControlRequestModel,
    ReviewRequestModel,
    StartWorkflowRequest,
    DefinitionDocument,
    ClaimRequest,
    HeartbeatRequest,
    CompleteRequest,
    CreateTaskRequest,
    CancelTaskRequest,
    QueueCapacityRequest,
    QuotaRequest,
)


__all__ = [
    "REQUEST_MODELS",
    "RESPONSE_MODELS",
    "AnyJson",
    "ApiModel",
    "CancelTaskRequest",
    "ClaimNext",
    "ClaimRequest",
    "ClaimResponse",
    "ClaimedTaskModel",
    "CompleteRequest",
    "CompleteResponse",
    "ControlRequestModel",
    "CreateTaskRequest",
    "DefinitionDocument",
    "DefinitionList",
    "DefinitionSummary",
    "DefinitionVersion",
    "DefinitionVersions",
    "HandlerDecl",
    "HealthResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "ProblemDetails",
    "ProblemItem",
    "PublishResponse",
    "QueueCapacityRequest",
    "QueueDetail",
    "QueueModel",
    "QueueWorker",
    "QuotaModel",
    "QuotaRequest",
    "ReviewRequestModel",
    "ReviewResponse",
    "StartWorkflowRequest",
    "TaskErrorModel",
    "TaskModel",
    "UtcDatetime",
    "VersionSummary",
    "WorkflowDetail",
    "WorkflowHistory",
    "WorkflowList",
    "WorkflowModel",
    "json_response",
    "rfc3339",
]


# --- signals (issue 6) ----------------------------------------------------------------


class SignalRequest(ApiModel):
    """Deliver a signal to one instance (idempotent on ``signal_id`` in the namespace)."""

    signal_id: str = Field(min_length=1, max_length=128,
                           description="stable id chosen by the sender; a retry reuses it")
    name: str = Field(min_length=1, max_length=128)
    correlation_key: str = Field(min_length=1, max_length=256,
                                 description="the business operation this signal is about")
    param_version: str = Field(default="1", min_length=1, max_length=128)
    payload: AnyJson = None
    evidence: list[AnyJson] = Field(default_factory=list, max_length=32,
                                    description="evidence references (ids, URLs, objects)")


class SignalModel(ApiModel):
    """One signal: accepted (durably saved) and consumed are reported separately."""

    signal_id: str
    workflow_id: str
    name: str
    correlation_key: str
    param_version: str
    payload: AnyJson
    evidence: AnyJson
    state: Literal["ACCEPTED", "CONSUMED", "LOST", "EXPIRED"]
    accepted_by: str
    accepted_at: str
    expires_at: str
    target_activation_id: str | None
    consumed_by_activation_id: str | None
    settled_at: str | None
    reason: str | None


class SignalList(ApiModel):
    """The signals of one instance, in acceptance order."""

    items: list[SignalModel]


RESPONSE_MODELS += (SignalModel, SignalList)
REQUEST_MODELS += (SignalRequest,)
__all__ += ["SignalList", "SignalModel", "SignalRequest"]


# --- task records (issue 12) ----------------------------------------------------------


class AttemptModel(ApiModel):
    """One attempt of a task: who ran it, its lease and heartbeats, how it ended."""

    attempt_id: str
    attempt_no: int
    worker_id: str
    claimed_at: str = Field(description="when a claim handed it out (the attempt starts then)")
    started_at: str
    lease_expires_at: str = Field(description="the lease as last renewed")
    close_by: str | None = Field(description="start-to-close limit of the attempt")
    last_heartbeat_at: str | None
    ended_at: str | None = Field(description="when it ended: a report, a lease expiry, ...")
    reported_at: str | None = Field(description="when the worker's report was taken "
                                    "(null when the engine ended it)")
    outcome: str | None = Field(description="succeeded, failed, cancelled, lease_expired, "
                                "deadline_exceeded; null while it runs")
    error: AnyJson = Field(description="the error that ended it (type, message, ...)")


class AttemptList(ApiModel):
    """The attempts of one task, in attempt order."""

    items: list[AttemptModel]


class TaskEventModel(ApiModel):
    """One event of a task: created, started, retry_scheduled, report_refused, settled."""

    id: int
    task_id: str
    revision: int
    event_type: str
    attempt_id: str | None
    occurred_at: str
    payload: AnyJson


class TaskEventList(ApiModel):
    """The events of one task, oldest first."""

    items: list[TaskEventModel]


RESPONSE_MODELS += (AttemptList, TaskEventList)
__all__ += ["AttemptList", "AttemptModel", "TaskEventList", "TaskEventModel"]
