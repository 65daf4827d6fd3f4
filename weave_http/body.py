"""Request bodies: the size limit enforced while streaming, JSON only, parsed exactly.

Order of checks (each one refuses before any later, costlier one runs):
1. ``Content-Type`` must be ``application/json`` (charset, if given, ``utf-8``) → 415;
2. a ``Content-Length`` over ``limits.max_body_bytes`` → 413 without reading a byte;
3. the body is read chunk by chunk and refused with 413 as soon as the running total
   passes the limit (a chunked body has no Content-Length; a lying one is caught here);
4. :func:`weave_core.foundation.exactjson.loads` parses it (invalid UTF-8, NaN/Infinity, duplicate
   keys, syntax → 400 ``invalid_json``; nesting past ``limits.max_json_depth`` → 400
   ``json_too_deep``; numbers stay ``int``/``Decimal``, so ``1e400`` and ``2**64`` are exact).
"""

from __future__ import annotations

from typing import Any, TypeVar

import pydantic
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request

from weave_core.foundation import exactjson
from weave_core.foundation.errors import (
    BadRequestError,
    InvalidJsonError,
    PayloadTooLargeError,
    Problem,
    UnsupportedMediaTypeError,
    ValidationError,
)
from weave_core.foundation.limits import Limits

JSON_MEDIA_TYPE = "application/json"

M = TypeVar("M", bound=pydantic.BaseModel)

# Parsing a small body inline is cheaper than a thread hop; larger ones go to the pool so a
# 2 MiB document never stalls the event loop.
_INLINE_PARSE_BYTES = 64 * 1024


def check_content_type(request: Request) -> None:
    """Refuse anything but ``application/json`` (optionally ``; charset=utf-8``)."""
    raw = request.headers.get("content-type")
    if raw is None:
        raise UnsupportedMediaTypeError(
            "the request body must be sent with Content-Type: application/json",
            details={"expected": JSON_MEDIA_TYPE},
        )
    media_type, _, params = raw.partition(";")
    if media_type.strip().lower() != JSON_MEDIA_TYPE:
        raise UnsupportedMediaTypeError(
            f"unsupported Content-Type {media_type.strip()!r}; send application/json",
            details={"expected": JSON_MEDIA_TYPE, "received": media_type.strip()[:100]},
        )
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in (
            "utf-8",
            "utf8",
        ):
            raise UnsupportedMediaTypeError(
                "JSON bodies must be UTF-8", details={"charset": value.strip()[:40]}
            )


def _too_large(limit: int) -> PayloadTooLargeError:
    return PayloadTooLargeError(
        f"the request body exceeds the limit of {limit} bytes",
        details={"limit_bytes": limit, "limit": "max_body_bytes"},
    )


def declared_length(request: Request) -> int | None:
    """The ``Content-Length`` header as a number, or None; a malformed one is a 400."""
    raw = request.headers.get("content-length")
    if raw is None:
        return None
    text = raw.strip()
    if not text.isdigit() or not text.isascii():
        raise BadRequestError("malformed Content-Length header")
    return int(text)


async def read_limited(request: Request, limit: int) -> bytes:
    """The whole body, refusing with 413 as soon as it passes ``limit`` bytes.

    Never holds more than ``limit`` bytes plus one chunk in memory.
    """
    length = declared_length(request)
    if length is not None and length > limit:
        raise _too_large(limit)
    buffer = bytearray()
    try:
        async for chunk in request.stream():
            if len(buffer) + len(chunk) > limit:
                raise _too_large(limit)
            buffer += chunk
    except ClientDisconnect as exc:
        raise BadRequestError("the client disconnected before sending the whole body") from exc
    return bytes(buffer)


async def read_json(request: Request, limits: Limits) -> exactjson.JSON:
    """Check the media type, read the body within the limit, and parse it exactly."""
    check_content_type(request)
    data = await read_limited(request, limits.max_body_bytes)
    if not data:
        raise InvalidJsonError("the request body is empty; send a JSON document")
    if len(data) <= _INLINE_PARSE_BYTES:
        return parse_json(data, limits.max_json_depth)
    return await run_in_threadpool(parse_json, data, limits.max_json_depth)


def parse_json(data: bytes, max_depth: int) -> exactjson.JSON:
    """Parse a body exactly; every refusal is a 400 ``invalid_json`` family problem."""
    return exactjson.loads(data, max_depth=max_depth)


def json_path(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as a JSON path: ``("a", 0, "b")`` → ``$.a[0].b``."""
    path = "$"
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def validate_model(model: type[M], value: Any) -> M:
    """Validate a parsed body against a request model; every problem becomes a 422 entry."""
    try:
        return model.model_validate(value, strict=False)
    except pydantic.ValidationError as exc:
        problems = [
            Problem(path=json_path(tuple(err["loc"])), code=err["type"], message=err["msg"])
            for err in exc.errors(include_url=False, include_input=False)
        ]
        raise ValidationError(
            f"the request body does not match {model.__name__}", problems
        ) from None


def require_object(value: exactjson.JSON, what: str) -> dict[str, Any]:
    """A body that must be a JSON object; anything else is a 422 with one problem at ``$``."""
    if not isinstance(value, dict):
        raise ValidationError(
            f"{what} must be a JSON object",
            [Problem(path="$", code="invalid_field", message=f"{what} must be a JSON object")],
        )
    return value


__all__ = [
    "JSON_MEDIA_TYPE",
    "check_content_type",
    "declared_length",
    "json_path",
    "parse_json",
    "read_json",
    "read_limited",
    "require_object",
    "validate_model",
]
