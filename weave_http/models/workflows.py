"""Workflows on the wire: start, the instance views, results and history."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from weave_http.models.base import AnyJson, ApiModel, JsonObject


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


__all__ = [
    "StartWorkflowRequest",
    "WorkflowDetail",
    "WorkflowHistory",
    "WorkflowList",
    "WorkflowModel",
    "WorkflowResult",
]
