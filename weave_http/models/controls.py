"""Controls, review and recovery on the wire."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from weave_http.models.base import ApiModel, JsonObject
from weave_http.models.workflows import WorkflowModel


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


__all__ = [
    "ControlRequestModel",
    "ReviewRequestModel",
    "ReviewResponse",
]
