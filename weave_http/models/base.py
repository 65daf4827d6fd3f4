"""What every wire model shares: the base model, times as RFC 3339, and the exact JSON response."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainSerializer, WithJsonSchema
from starlette.responses import Response

from weave_core.foundation import exactjson

JSON_MEDIA_TYPE = "application/json"


def rfc3339(value: datetime) -> str:
    """RFC 3339 UTC with microseconds and ``Z``; a naive datetime is taken as UTC.

    The database layer returns naive UTC datetimes (the session time zone is pinned).
    """
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    # isoformat is the C path (strftime parses its format on every call: ~1% of a server's
    # CPU under load); the same text, and four year digits even before year 1000.
    return value.isoformat(timespec="microseconds") + "Z"


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


AnyJson = Annotated[Any, WithJsonSchema({"description": "any JSON value (numbers exact)"})]
"""Any JSON value; numbers stay exact (int / Decimal)."""


def json_response(model: BaseModel, status_code: int = 200) -> Response:
    """A response whose body is ``model`` written as exact, canonical JSON."""
    return Response(
        exactjson.dumps(model.model_dump(mode="python")),
        status_code=status_code,
        media_type=JSON_MEDIA_TYPE,
    )


__all__ = [
    "JSON_MEDIA_TYPE",
    "AnyJson",
    "ApiModel",
    "JsonObject",
    "UtcDatetime",
    "json_response",
    "rfc3339",
]
