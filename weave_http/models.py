"""The wire shapes of the API as pydantic models, and how a response is written.

The models are the single source of the OpenAPI schemas (``weave_http.openapi``) and of
every JSON response body. Bodies are written with :func:`weave_core.exactjson.dumps`, so
numbers inside documents stay exact (``1e400``, ``2**64``); datetimes are RFC 3339 UTC
with microseconds and ``Z`` (``2025-01-31T12:00:00.000000Z``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, WithJsonSchema
from starlette.responses import Response

from weave_core import exactjson

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


def json_response(model: BaseModel, status_code: int = 200) -> Response:
    """A response whose body is ``model`` written as exact, canonical JSON."""
    return Response(
        exactjson.dumps(model.model_dump(mode="python")),
        status_code=status_code,
        media_type=JSON_MEDIA_TYPE,
    )


RESPONSE_MODELS: tuple[type[BaseModel], ...] = (
    HealthResponse,
    DefinitionVersion,
    PublishResponse,
    DefinitionList,
    DefinitionVersions,
    ProblemDetails,
)
REQUEST_MODELS: tuple[type[BaseModel], ...] = (DefinitionDocument,)


__all__ = [
    "REQUEST_MODELS",
    "RESPONSE_MODELS",
    "ApiModel",
    "DefinitionDocument",
    "DefinitionList",
    "DefinitionSummary",
    "DefinitionVersion",
    "DefinitionVersions",
    "HealthResponse",
    "ProblemDetails",
    "ProblemItem",
    "PublishResponse",
    "UtcDatetime",
    "VersionSummary",
    "json_response",
    "rfc3339",
]
