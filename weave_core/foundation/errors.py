"""The one error tree of the engine: every failure a caller can see has a class and a stable code.

Codes are a public contract (they appear in problem+json bodies and in audit rows): never
rename one. Context travels as attributes and as ``details`` (JSON-safe), never pickled.
The mapping from class to HTTP status lives in ``weave_http.problems`` only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class Problem:
    """One problem found in a document: where (JSON path), what (stable code), and why."""

    path: str
    code: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "code": self.code, "message": self.message}


class WeaveError(Exception):
    """Root of every error Weave raises on purpose."""

    code: ClassVar[str] = "weave_error"

    def __init__(self, message: str, *, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})


# --- input and documents -------------------------------------------------------------


class BadRequestError(WeaveError):
    """The request is malformed (not a document problem: a transport or envelope problem)."""

    code = "bad_request"


class InvalidJsonError(BadRequestError):
    """The body is not acceptable JSON: syntax, NaN/Infinity, duplicate keys, bad UTF-8."""

    code = "invalid_json"


class JsonTooDeepError(InvalidJsonError):
    """The JSON nests deeper than the configured limit."""

    code = "json_too_deep"


class PayloadTooLargeError(WeaveError):
    """A body or value is larger than its configured limit."""

    code = "payload_too_large"


class UnsupportedMediaTypeError(WeaveError):
    """The body is not sent as JSON."""

    code = "unsupported_media_type"


class ValidationError(WeaveError):
    """A document was refused; ``problems`` lists every problem found, not only the first."""

    code = "validation_failed"

    def __init__(self, message: str, problems: Sequence[Problem]) -> None:
        super().__init__(message, details={"problems": [p.to_json() for p in problems]})
        self.problems: list[Problem] = list(problems)


class LimitExceededError(WeaveError):
    """A configured capacity limit would be exceeded; nothing already accepted is lost."""

    code = "limit_exceeded"


# --- identity ------------------------------------------------------------------------


class AuthenticationError(WeaveError):
    """No token, or a token that is unknown, malformed or revoked."""

    code = "unauthenticated"


class PermissionDeniedError(WeaveError):
    """The token is valid for this namespace but lacks the permission the call needs."""

    code = "permission_denied"


# --- objects -------------------------------------------------------------------------


class NotFoundError(WeaveError):
    """The object does not exist, or lives in a namespace the caller cannot see."""

    code = "not_found"


class ConflictError(WeaveError):
    """The request contradicts what is already recorded."""

    code = "conflict"


class AlreadyExistsError(ConflictError):
    """An object with this identity already exists."""

    code = "already_exists"


class DefinitionConflictError(ConflictError):
    """The same definition id and version was already published with different content."""

    code = "definition_version_conflict"


# --- plugins -------------------------------------------------------------------------


class PluginError(WeaveError):
    """A node plugin is broken: unknown hook, duplicate kind, bad spec version, bad kind."""

    code = "plugin_error"


# --- storage -------------------------------------------------------------------------


class StorageError(WeaveError):
    """The database failed in a way a retry did not cure."""

    code = "storage_error"


class DatabaseNotMigratedError(StorageError):
    """The database schema is missing or behind the code; run ``weave migrate``."""

    code = "database_not_migrated"


class DatabaseURLError(WeaveError, ValueError):
    """A database URL that cannot be read (``malformed_database_url``)."""

    code = "malformed_database_url"


class UnsupportedDatabaseError(DatabaseURLError):
    """A database URL of a backend or driver Weave does not run on."""

    code = "unsupported_database_url"


class TransactionRetriesExhaustedError(StorageError):
    """A transaction kept hitting deadlocks or lock wait timeouts past its retry budget."""

    code = "transaction_retries_exhausted"


__all__ = [
    "AlreadyExistsError",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "DatabaseNotMigratedError",
    "DatabaseURLError",
    "DefinitionConflictError",
    "InvalidJsonError",
    "JsonTooDeepError",
    "LimitExceededError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "PluginError",
    "Problem",
    "StorageError",
    "TransactionRetriesExhaustedError",
    "UnsupportedDatabaseError",
    "UnsupportedMediaTypeError",
    "ValidationError",
    "WeaveError",
]
