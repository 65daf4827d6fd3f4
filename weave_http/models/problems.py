"""Errors on the wire: problem+json (RFC 9457) with the engine's stable codes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from weave_http.models.base import ApiModel


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


__all__ = [
    "ProblemDetails",
    "ProblemItem",
]
