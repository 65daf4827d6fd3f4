"""Re-exports :mod:`weave_core.foundation.errors` at its stable public path.

Plugin authors and the API raise and catch these errors. Kept when the kernel was grouped
into folders (#16); code inside the kernel imports :mod:`weave_core.foundation.errors`
itself.
"""

from weave_core.foundation.errors import (
    AlreadyExistsError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    DatabaseNotMigratedError,
    DatabaseURLError,
    DefinitionConflictError,
    InvalidJsonError,
    JsonTooDeepError,
    LimitExceededError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    PluginError,
    Problem,
    StorageError,
    TransactionRetriesExhaustedError,
    UnsupportedDatabaseError,
    UnsupportedMediaTypeError,
    ValidationError,
    WeaveError,
)

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
