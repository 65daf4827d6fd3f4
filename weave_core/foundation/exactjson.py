"""Exact JSON for the engine: the SDK's one implementation with the engine's errors.

Every JSON document that enters or leaves the engine passes through here (R-2.4). The
rules (numbers as int/Decimal, hostile input refused, one canonical form and its hash)
live once, in ``weave_sdk.exactjson``, so the SDK and the server cannot drift apart. This
module only adapts them: ``dumps`` is the canonical form, and every refusal becomes an
``InvalidJsonError`` (``JsonTooDeepError``, ``PayloadTooLargeError``) with its stable code.
"""

from __future__ import annotations

from decimal import Decimal

from weave_core.foundation.errors import InvalidJsonError, JsonTooDeepError, PayloadTooLargeError
from weave_sdk import exactjson as _exact
from weave_sdk.exactjson import JSON, MAX_NUMBER_DIGITS, depth, text_hash, text_size

DEFAULT_MAX_DEPTH = _exact.MAX_DEPTH


def _engine_error(exc: _exact.JSONDecodeError) -> InvalidJsonError | PayloadTooLargeError:
    if isinstance(exc, _exact.JSONTooLargeError):
        return PayloadTooLargeError(exc.message, details=exc.details)
    if isinstance(exc, _exact.JSONTooDeepError):
        return JsonTooDeepError(exc.message, details=exc.details)
    return InvalidJsonError(exc.message, details=exc.details)


def loads(
    data: bytes | str, *, max_depth: int = DEFAULT_MAX_DEPTH, max_bytes: int | None = None
) -> JSON:
    """Parse one JSON document exactly, or raise an ``InvalidJsonError`` subclass."""
    try:
        return _exact.loads(data, max_depth=max_depth, max_bytes=max_bytes)
    except _exact.JSONDecodeError as exc:
        raise _engine_error(exc) from exc


def loads_stored(text: str | None) -> JSON:
    """Read back canonical text the engine wrote to its own tables (a hot-path read: see
    ``weave_sdk.exactjson.loads_stored``); a NULL column (None) reads as None, text that is
    not JSON raises ``InvalidJsonError``."""
    if text is None:
        return None
    try:
        return _exact.loads_stored(text)
    except _exact.JSONDecodeError as exc:
        raise _engine_error(exc) from exc


def canonical_number(value: int | Decimal) -> str:
    """The one spelling of a number (see ``weave_sdk.exactjson.canonical_number``)."""
    try:
        return _exact.canonical_number(value)
    except _exact.NotJSONError as exc:
        raise InvalidJsonError(exc.reason) from None


def dumps(value: JSON) -> str:
    """Write ``value`` in canonical JSON (sorted keys, no spaces, exact numbers).

    ``float`` raises ``TypeError``; NaN/Infinity raise ``InvalidJsonError``.
    """
    try:
        return _exact.canonical_dumps(value)
    except ValueError as exc:
        raise InvalidJsonError(str(exc)) from None


def content_hash(value: JSON) -> str:
    """SHA-256 of the canonical form, hex: the identity of a document's content."""
    try:
        return _exact.content_hash(value)
    except ValueError as exc:
        raise InvalidJsonError(str(exc)) from None


def size_of(value: JSON) -> int:
    """Bytes of the canonical UTF-8 form: the size every limit in the engine counts."""
    try:
        return _exact.size_of(value)
    except ValueError as exc:
        raise InvalidJsonError(str(exc)) from None


def canonicalize(value: JSON) -> JSON:
    """Return the value as it reads back from its canonical text (numbers normalised)."""
    return loads(dumps(value), max_depth=max(DEFAULT_MAX_DEPTH, depth(value)))


__all__ = [
    "DEFAULT_MAX_DEPTH",
    "JSON",
    "MAX_NUMBER_DIGITS",
    "canonical_number",
    "canonicalize",
    "content_hash",
    "depth",
    "dumps",
    "loads",
    "loads_stored",
    "size_of",
    "text_hash",
    "text_size",
]
