"""Errors the SDK raises: one tree rooted at ``WeaveSDKError``, context kept as attributes.

Server answers that are errors become ``WeaveAPIError`` subclasses chosen by HTTP status;
each carries the problem+json body's ``status``, ``code``, ``detail`` and the whole body as
``problem``. Problems of a refused definition (422) are ``Problem`` objects on
``ValidationError.problems``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One problem in a definition: where (JSON path), what (stable code) and why.

    :param path: JSON path of the offending value, e.g. ``$.steps[1].cases[0].when``.
    :param code: stable code; see ``weave_sdk.validate.PROBLEM_CODES``.
    :param message: human-readable explanation.
    """

    path: str
    code: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "code": self.code, "message": self.message}

    def __str__(self) -> str:
        return f"{self.path}: {self.code}: {self.message}"


class WeaveSDKError(Exception):
    """Root of every error the SDK raises on purpose."""


class ConfigurationError(WeaveSDKError, ValueError):
    """A client setting is missing or malformed (URL, token, namespace)."""


class DefinitionFormatError(WeaveSDKError, ValueError):
    """A definition document cannot be read into the builder (``Workflow.from_json``).

    :param path: JSON path of the offending value.
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class WeaveConnectionError(WeaveSDKError):
    """The server could not be reached or did not answer in time (the cause is chained)."""


class InvalidResponseError(WeaveSDKError):
    """The server answered with something that is not the documented response."""

    def __init__(self, message: str, *, status: int | None = None, body: bytes = b"") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class WeaveAPIError(WeaveSDKError):
    """The server refused a request; the problem+json body is kept as attributes.

    :param status: HTTP status code.
    :param code: the server's stable error code (e.g. ``definition_version_conflict``).
    :param detail: human-readable explanation from the server.
    :param problem: the whole problem+json body (``type``, ``title``, extra members...).
    """

    def __init__(self, status: int, code: str, detail: str, problem: Mapping[str, Any]) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.problem: dict[str, Any] = dict(problem)

    @property
    def title(self) -> str | None:
        title = self.problem.get("title")
        return title if isinstance(title, str) else None


class BadRequestError(WeaveAPIError):
    """400 (or 413/415): the request envelope was refused (bad JSON, too large...)."""


class AuthenticationError(WeaveAPIError):
    """401: no token, or an unknown, malformed or revoked one."""


class PermissionDeniedError(WeaveAPIError):
    """403: the token lacks the permission this call needs."""


class NotFoundError(WeaveAPIError):
    """404: no such object in this namespace (or the namespace is not the token's)."""


class ConflictError(WeaveAPIError):
    """409: the request contradicts what is recorded (e.g. same version, other content)."""


class ValidationError(WeaveAPIError):
    """422: the document was refused; ``problems`` lists every problem the server found."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        problem: Mapping[str, Any],
        problems: list[Problem],
    ) -> None:
        super().__init__(status, code, detail, problem)
        self.problems = problems


class RateLimitedError(WeaveAPIError):
    """429: slow down; ``retry_after`` is the server's hint in seconds, if it sent one."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        problem: Mapping[str, Any],
        retry_after: int | None = None,
    ) -> None:
        super().__init__(status, code, detail, problem)
        self.retry_after = retry_after


class ServerError(WeaveAPIError):
    """5xx: the server failed or is unavailable; the request may be retried."""


__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "ConfigurationError",
    "ConflictError",
    "DefinitionFormatError",
    "InvalidResponseError",
    "NotFoundError",
    "PermissionDeniedError",
    "Problem",
    "RateLimitedError",
    "ServerError",
    "ValidationError",
    "WeaveAPIError",
    "WeaveConnectionError",
    "WeaveSDKError",
]
