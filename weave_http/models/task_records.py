"""Task records on the wire: a task's attempts and its events."""

from __future__ import annotations

from pydantic import Field

from weave_http.models.base import AnyJson, ApiModel


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


__all__ = [
    "AttemptList",
    "AttemptModel",
    "TaskEventList",
    "TaskEventModel",
]
