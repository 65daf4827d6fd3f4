"""Exact JSON, the one implementation the SDK and the engine share (R-2.4).

Numbers stay exact: ``loads`` parses integers as ``int`` and every other number as
``Decimal``, never ``float``. Hostile input is refused with a ``JSONDecodeError``: invalid
UTF-8, a byte order mark, NaN/Infinity, duplicate keys, nesting past a limit, numbers of
more than 4300 digits and escaped lone surrogates. Two writers:

- ``dumps`` is compact, keeps key order and spells a ``Decimal`` as ``str()`` does
  (``1.10`` stays ``1.10``): what a client sends;
- ``canonical_dumps`` is the canonical form (sorted keys, one spelling per rational:
  ``1.10`` and ``1.1`` both become ``1.1``), so equal documents have equal text and
  ``content_hash`` identifies them: what the engine stores and hashes.

Both refuse ``float`` (``TypeError``) and non-finite numbers (``ValueError``). The engine's
``weave_core.exactjson`` adapts the refusals to its own error classes and codes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, NoReturn

from weave_sdk._json_writer import NotJSONError, canonical_number, encode, write

JSON = Any
"""A JSON value as this module produces it: None | bool | int | Decimal | str | list | dict.

``Any`` stands for the recursive union, which mypy cannot name.
"""

MAX_DEPTH = 64
"""Deepest nesting ``loads`` accepts by default (the server's default limit)."""

MAX_NUMBER_DIGITS = 4300
"""Longest number literal accepted (Python's own int/str conversion limit)."""


class JSONDecodeError(ValueError):
    """A document is not acceptable JSON (syntax, NaN/Infinity, duplicate key, nesting…).

    ``details`` holds JSON-safe context (a position, the limit); the engine passes it on
    in its problem+json bodies.
    """

    def __init__(self, message: str, *, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})


class JSONTooDeepError(JSONDecodeError):
    """The document nests deeper than the allowed depth."""


class JSONTooLargeError(JSONDecodeError):
    """The encoded document is longer than the allowed number of bytes."""


# --- reading ----------------------------------------------------------------------------


def _reject_constant(name: str) -> NoReturn:
    raise JSONDecodeError(f"{name} is not a JSON number", details={"token": name})


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise JSONDecodeError(f"duplicate key {key!r} in a JSON object", details={"key": key})
        result[key] = value
    return result


def _too_long() -> JSONDecodeError:
    return JSONDecodeError(
        f"a number has more than {MAX_NUMBER_DIGITS} digits",
        details={"max_digits": MAX_NUMBER_DIGITS},
    )


def _parse_number(text: str) -> Decimal:
    if len(text) > MAX_NUMBER_DIGITS:
        raise _too_long()
    try:
        return Decimal(text)
    except InvalidOperation as exc:  # the JSON grammar already excludes this; kept for safety
        raise JSONDecodeError(f"bad number {text!r}") from exc


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise _too_long()
    return int(text)


def depth(value: JSON) -> int:
    """Return how deeply ``value`` nests (a scalar is 0, ``[]`` is 1), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            level += 1
            stack.extend((v, level) for v in item.values())
        elif isinstance(item, list):
            level += 1
            stack.extend((v, level) for v in item)
        deepest = max(deepest, level)
    return deepest


def _too_deep(max_depth: int) -> JSONTooDeepError:
    return JSONTooDeepError(
        f"JSON nests deeper than {max_depth} levels", details={"max_depth": max_depth}
    )


_STRICT = json.JSONDecoder(
    parse_float=_parse_number,
    parse_int=_parse_int,
    parse_constant=_reject_constant,
    object_pairs_hook=_no_duplicates,
)
"""The one strict decoder: ``json.loads`` with these hooks would build a new decoder on
every call (a few µs each, on the engine's hot path)."""

_STORED = json.JSONDecoder(parse_float=Decimal)


def loads_stored(text: str) -> JSON:
    """Read back canonical text this library wrote (e.g. a column the engine stored):
    the same value :func:`loads` gives, without the checks that only untrusted text
    needs.

    Why: canonical text has no duplicate keys, no NaN or Infinity, numbers within the digit
    limit (they were checked when the value was first accepted) and the nesting it had
    then, so the per-object and per-integer hooks and the depth walk of :func:`loads` —
    most of its cost — prove nothing here. Text that is not JSON still raises
    ``JSONDecodeError``; anything else that might not be canonical goes to :func:`loads`.
    """
    try:
        return _STORED.decode(text)
    except json.JSONDecodeError as exc:
        raise JSONDecodeError(
            f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            details={"line": exc.lineno, "column": exc.colno},
        ) from exc
    except RecursionError as exc:
        raise _too_deep(MAX_DEPTH) from exc


def loads(data: bytes | str, *, max_depth: int = MAX_DEPTH, max_bytes: int | None = None) -> JSON:
    """Parse one JSON document exactly, or raise ``JSONDecodeError`` (or a subclass)."""
    if isinstance(data, bytes):
        if max_bytes is not None and len(data) > max_bytes:
            raise JSONTooLargeError(
                f"JSON document of {len(data)} bytes exceeds the limit of {max_bytes} bytes",
                details={"limit_bytes": max_bytes},
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONDecodeError(
                f"body is not valid UTF-8 (byte {exc.start})", details={"position": exc.start}
            ) from exc
    else:
        text = data
    if text.startswith("\ufeff"):
        raise JSONDecodeError("a byte order mark is not allowed before JSON")
    try:
        value = _STRICT.decode(text)
    except RecursionError as exc:
        raise _too_deep(max_depth) from exc
    except json.JSONDecodeError as exc:
        raise JSONDecodeError(
            f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            details={"line": exc.lineno, "column": exc.colno},
        ) from exc
    # Each level of nesting opens with a bracket, so a text with no more brackets than the
    # limit (counted in C; brackets inside strings only raise the count) cannot be too
    # deep and needs no walk of the value.
    if text.count("{") + text.count("[") > max_depth and depth(value) > max_depth:
        raise _too_deep(max_depth)
    if "\\u" in text:  # only escapes can produce an unpaired surrogate
        _check_strings(value)
    return value


def _check_text(text: str) -> None:
    """Refuse strings that cannot be written as UTF-8 (escaped lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise JSONDecodeError(
            "a string contains an unpaired surrogate escape (not valid Unicode)"
        ) from exc


def _check_strings(value: JSON) -> None:
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            _check_text(item)
        elif isinstance(item, dict):
            for key, child in item.items():
                _check_text(key)
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)


# --- writing: weave_sdk._json_writer -------------------------------------------------


def dumps(value: JSON) -> str:
    """Write ``value`` as compact JSON with exact numbers, keys in their order.

    ``float`` (anywhere) raises ``TypeError``; NaN/Infinity raise ``ValueError``.
    """
    return write(value, canonical=False)


def canonical_dumps(value: JSON) -> str:
    """Write ``value`` in canonical JSON (sorted keys, no spaces, one spelling per number)."""
    return write(value, canonical=True)


def check_exact(value: JSON, where: str = "$") -> None:
    """Raise ``TypeError`` if ``value`` holds a float or anything that is not JSON."""
    try:
        encode(value, [], canonical=False)
    except NotJSONError as exc:
        message = f"{where}{exc.path[1:]}: {exc.reason}"
        raise (ValueError(message) if exc.not_finite else TypeError(message)) from None


def content_hash(value: JSON) -> str:
    """SHA-256 of the canonical form, hex: the identity of a document's content."""
    return text_hash(canonical_dumps(value))


def text_hash(canonical: str) -> str:
    """:func:`content_hash` of a document whose canonical text is already written."""
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def size_of(value: JSON) -> int:
    """Bytes of the canonical UTF-8 form: the size every limit in the engine counts."""
    return text_size(canonical_dumps(value))


def text_size(canonical: str) -> int:
    """:func:`size_of` a document whose canonical text is already written."""
    return len(canonical.encode("utf-8"))


def canonicalize(value: JSON) -> JSON:
    """Return the value as it reads back from its canonical text (numbers normalised)."""
    return loads(canonical_dumps(value), max_depth=max(MAX_DEPTH, depth(value)))


__all__ = [
    "JSON",
    "MAX_DEPTH",
    "MAX_NUMBER_DIGITS",
    "JSONDecodeError",
    "JSONTooDeepError",
    "JSONTooLargeError",
    "NotJSONError",
    "canonical_dumps",
    "canonical_number",
    "canonicalize",
    "check_exact",
    "content_hash",
    "depth",
    "dumps",
    "loads",
    "loads_stored",
    "size_of",
    "text_hash",
    "text_size",
]
