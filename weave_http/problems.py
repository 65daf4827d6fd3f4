"""The one mapping from errors to HTTP: status codes and ``application/problem+json`` bodies.

Every error response of the API is built here (RFC 9457 problem details)::

    {"type": "https://weave.dev/problems/<code>", "title": "...", "status": 404,
     "code": "not_found", "detail": "...", "instance": "/v1/...", ...details}

``code`` is the stable, machine-readable contract; ``title`` and ``detail`` are for people.
The error's ``details`` are merged in at the top level (a ``ValidationError`` adds
``problems``), never overriding the reserved members above.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from typing import Any, Final

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from weave_core.foundation import exactjson
from weave_core.foundation.errors import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    LimitExceededError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    StorageError,
    UnsupportedMediaTypeError,
    ValidationError,
    WeaveError,
)

logger = logging.getLogger(__name__)

PROBLEM_MEDIA_TYPE: Final = "application/problem+json"
PROBLEM_TYPE_BASE: Final = "https://weave.dev/problems/"
RESERVED_MEMBERS: Final = frozenset({"type", "title", "status", "code", "detail", "instance"})

# The mapping, most specific class first; the first ``isinstance`` match wins.
# LimitExceededError is 429: it reports a runtime capacity (quota, backlog) that may free
# up later, so a retry can succeed. Limits of a document (steps, sizes, nesting) are
# reported as ValidationError problems (422) instead.
STATUS_BY_ERROR: Final[tuple[tuple[type[WeaveError], int, str], ...]] = (
    (ValidationError, 422, "Validation failed"),
    (AuthenticationError, 401, "Authentication required"),
    (PermissionDeniedError, 403, "Permission denied"),
    (NotFoundError, 404, "Not found"),
    (ConflictError, 409, "Conflict"),
    (PayloadTooLargeError, 413, "Payload too large"),
    (UnsupportedMediaTypeError, 415, "Unsupported media type"),
    (BadRequestError, 400, "Bad request"),
    (LimitExceededError, 429, "Limit exceeded"),
    (StorageError, 503, "Service unavailable"),
    (WeaveError, 500, "Internal error"),
)

ROUTE_NOT_FOUND: Final = "route_not_found"
METHOD_NOT_ALLOWED: Final = "method_not_allowed"
INTERNAL_ERROR: Final = "internal_error"

# Headers an HTTPException may carry that we pass on (405 carries Allow).
_FORWARDED_HEADERS: Final = frozenset({"allow", "retry-after", "www-authenticate"})


def status_for(exc: WeaveError) -> tuple[int, str]:
    """HTTP status and title of a Weave error (the only place that decides it)."""
    for cls, status, title in STATUS_BY_ERROR:
        if isinstance(exc, cls):
            return status, title
    raise AssertionError("unreachable: WeaveError is the last row")  # pragma: no cover


def problem_body(
    *,
    status: int,
    code: str,
    title: str,
    detail: str,
    instance: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The problem+json object; ``extra`` members never override the reserved ones."""
    body: dict[str, Any] = {
        "type": PROBLEM_TYPE_BASE + code,
        "title": title,
        "status": status,
        "code": code,
        "detail": detail,
    }
    if instance is not None:
        body["instance"] = instance
    for key, value in (extra or {}).items():
        if key not in RESERVED_MEMBERS:
            body[key] = value
    return body


def problem_response(
    *,
    status: int,
    code: str,
    title: str,
    detail: str,
    instance: str | None = None,
    extra: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    body = problem_body(
        status=status, code=code, title=title, detail=detail, instance=instance, extra=extra
    )
    try:
        content = exactjson.dumps(body)
    except (TypeError, ValueError, WeaveError):
        # Details that are not JSON are a bug in the raiser; the status and code still hold.
        logger.exception("problem details of %s are not JSON; sent without them", code)
        content = exactjson.dumps(
            problem_body(status=status, code=code, title=title, detail=detail, instance=instance)
        )
    return Response(content, status_code=status, headers=headers, media_type=PROBLEM_MEDIA_TYPE)


def weave_error_response(request: Request, exc: Exception) -> Response:
    """Exception handler for every ``WeaveError``."""
    assert isinstance(exc, WeaveError)
    status, title = status_for(exc)
    headers: dict[str, str] = {}
    if isinstance(exc, AuthenticationError):
        headers["WWW-Authenticate"] = 'Bearer realm="weave"'
    retry_after = exc.details.get("retry_after_seconds")
    if isinstance(retry_after, int) and not isinstance(retry_after, bool):
        headers["Retry-After"] = str(retry_after)
    if status >= 500:
        logger.error("%s on %s %s: %s", exc.code, request.method, request.url.path, exc.message,
                     exc_info=exc if status == 500 else None)
    return problem_response(
        status=status,
        code=exc.code,
        title=title,
        detail=exc.message,
        instance=request.url.path,
        extra=exc.details,
        headers=headers,
    )


def http_error_response(request: Request, exc: Exception) -> Response:
    """Exception handler for Starlette's own ``HTTPException`` (unknown route, bad method)."""
    assert isinstance(exc, HTTPException)
    headers = {k: v for k, v in (exc.headers or {}).items() if k.lower() in _FORWARDED_HEADERS}
    if exc.status_code == 404:
        code, title = ROUTE_NOT_FOUND, "Route not found"
        detail = f"no route {request.url.path!r}"
    elif exc.status_code == 405:
        code, title = METHOD_NOT_ALLOWED, "Method not allowed"
        allowed = headers.get("Allow") or headers.get("allow") or ""
        detail = f"{request.method} is not allowed on {request.url.path!r} (allowed: {allowed})"
    else:
        code, title, detail = f"http_{exc.status_code}", "HTTP error", str(exc.detail)
    return problem_response(
        status=exc.status_code,
        code=code,
        title=title,
        detail=detail,
        instance=request.url.path,
        headers=headers,
    )


EXCEPTION_HANDLERS: Final = {
    WeaveError: weave_error_response,
    HTTPException: http_error_response,
}
"""Pass as ``Starlette(exception_handlers=...)``."""


class InternalErrorMiddleware:
    """Outermost safety net: an unexpected exception becomes a 500 ``internal_error``.

    The traceback is logged once here with an error id that the response also carries, so
    an operator can find it; the exception is not re-raised (the server would log it a
    second time). If the response had already started, nothing can be sent: re-raise.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            error_id = secrets.token_hex(8)
            logger.error(
                "internal_error %s on %s %s", error_id, scope.get("method"), scope.get("path"),
                exc_info=exc,
            )
            if started:
                raise
            response = problem_response(
                status=500,
                code=INTERNAL_ERROR,
                title="Internal error",
                detail=f"an unexpected error occurred (error id {error_id})",
                instance=str(scope.get("path", "")),
                extra={"error_id": error_id},
            )
            await response(scope, receive, send)


__all__ = [
    "EXCEPTION_HANDLERS",
    "INTERNAL_ERROR",
    "METHOD_NOT_ALLOWED",
    "PROBLEM_MEDIA_TYPE",
    "PROBLEM_TYPE_BASE",
    "ROUTE_NOT_FOUND",
    "STATUS_BY_ERROR",
    "InternalErrorMiddleware",
    "problem_body",
    "problem_response",
    "status_for",
    "weave_error_response",
]
