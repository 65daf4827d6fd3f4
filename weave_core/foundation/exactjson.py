"""Exact JSON: numbers as int/Decimal (never float), hostile input refused, one canonical form.

Every JSON document that enters or leaves the engine passes through here (R-2.4):
- ``loads`` refuses invalid UTF-8, NaN/Infinity, duplicate keys and nesting past a limit;
- ``dumps`` writes the canonical form (sorted keys, no spaces, exact numbers), so equal
  documents have equal text and ``content_hash`` can identify them;
- numbers that are equal as rationals have one canonical spelling (``1.10`` and ``1.1``
  both become ``1.1``; ``1E+2`` becomes ``100``), so hashing is by value, not by spelling.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, NoReturn

from weave_core.foundation.errors import InvalidJsonError, JsonTooDeepError, PayloadTooLargeError

DEFAULT_MAX_DEPTH = 64

# A JSON value as this module produces it. ``Any`` stands for the recursive union
# (None | bool | int | Decimal | str | list[JSON] | dict[str, JSON]) that mypy cannot name.
JSON = Any


def _reject_constant(name: str) -> NoReturn:
    raise InvalidJsonError(f"{name} is not a JSON number", details={"token": name})


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise InvalidJsonError(f"duplicate key {key!r} in a JSON object", details={"key": key})
        result[key] = value
    return result


def _parse_number(text: str) -> Decimal:
    if len(text) > MAX_NUMBER_DIGITS:
        raise InvalidJsonError(
            f"a number has more than {MAX_NUMBER_DIGITS} digits",
            details={"max_digits": MAX_NUMBER_DIGITS},
        )
    try:
        value = Decimal(text)
    except InvalidOperation as exc:  # the JSON grammar already excludes this; kept for safety
        raise InvalidJsonError(f"bad number {text!r}") from exc
    return value


MAX_NUMBER_DIGITS = 4300
"""Longest number literal accepted (Python's own int/str conversion limit)."""


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise InvalidJsonError(
            f"a number has more than {MAX_NUMBER_DIGITS} digits",
            details={"max_digits": MAX_NUMBER_DIGITS},
        )
    return int(text)


def _check_text(text: str) -> None:
    """Refuse strings that cannot be written as UTF-8 (escaped lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidJsonError(
            "a string contains an unpaired surrogate escape (not valid Unicode)"
        ) from exc


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


def loads(
    data: bytes | str, *, max_depth: int = DEFAULT_MAX_DEPTH, max_bytes: int | None = None
) -> JSON:
    """Parse one JSON document exactly, or raise an ``InvalidJsonError`` subclass."""
    if isinstance(data, bytes):
        if max_bytes is not None and len(data) > max_bytes:
            raise PayloadTooLargeError(
                f"JSON document of {len(data)} bytes exceeds the limit of {max_bytes} bytes",
                details={"limit_bytes": max_bytes},
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidJsonError(
                f"body is not valid UTF-8 (byte {exc.start})", details={"position": exc.start}
            ) from exc
    else:
        text = data
    if text.startswith("\ufeff"):
        raise InvalidJsonError("a byte order mark is not allowed before JSON")
    try:
        value = json.loads(
            text,
            parse_float=_parse_number,
            parse_int=_parse_int,
            parse_constant=_reject_constant,
            object_pairs_hook=_no_duplicates,
        )
    except RecursionError as exc:
        raise JsonTooDeepError(
            f"JSON nests deeper than {max_depth} levels", details={"max_depth": max_depth}
        ) from exc
    except json.JSONDecodeError as exc:
        raise InvalidJsonError(
            f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            details={"line": exc.lineno, "column": exc.colno},
        ) from exc
    if depth(value) > max_depth:
        raise JsonTooDeepError(
            f"JSON nests deeper than {max_depth} levels", details={"max_depth": max_depth}
        )
    if "\\u" in text:  # only escapes can produce an unpaired surrogate
        _check_strings(value)
    return value


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


_PLAIN_EXPONENT_LIMIT = 64


def canonical_number(value: int | Decimal) -> str:
    """The one spelling of a number: equal rationals give equal text; never rounds.

    Trailing zeros are dropped (``1.10`` → ``1.1``, ``1E+2`` → ``100``); magnitudes needing
    more than 64 zeros use ``E`` notation. Works on the digit tuple, so no Decimal context
    precision can round a long value.
    """
    if isinstance(value, bool):  # bool is an int subclass; callers must not pass it here
        raise TypeError("a boolean is not a number")
    if isinstance(value, int):
        return str(value)
    if not value.is_finite():
        raise InvalidJsonError(f"{value} is not a JSON number")
    sign, digit_tuple, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    if not digits:
        return "0"
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    prefix = "-" if sign else ""
    point = len(digits) + exponent  # position of the decimal point within ``digits``
    if 0 <= exponent <= _PLAIN_EXPONENT_LIMIT:
        return prefix + digits + "0" * exponent
    if exponent < 0 and point > 0:
        return prefix + digits[:point] + "." + digits[point:]
    if exponent < 0 and -point <= _PLAIN_EXPONENT_LIMIT:
        return prefix + "0." + "0" * (-point) + digits
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{prefix}{mantissa}E{point - 1}"


def _encode(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, int | Decimal):
        out.append(canonical_number(value))
    elif isinstance(value, float):
        raise TypeError("floats are not exact; pass int or Decimal to exactjson.dumps")
    elif isinstance(value, Mapping):
        out.append("{")
        first = True
        for key in sorted(value):
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, not {type(key).__name__}")
            if not first:
                out.append(",")
            first = False
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _encode(value[key], out)
        out.append("}")
    elif isinstance(value, Sequence):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out)
        out.append("]")
    else:
        raise TypeError(f"{type(value).__name__} is not JSON")


def dumps(value: JSON) -> str:
    """Write ``value`` in canonical JSON (sorted keys, no spaces, exact numbers)."""
    out: list[str] = []
    _encode(value, out)
    return "".join(out)


def content_hash(value: JSON) -> str:
    """SHA-256 of the canonical form, hex: the identity of a document's content."""
    return hashlib.sha256(dumps(value).encode("utf-8")).hexdigest()


def size_of(value: JSON) -> int:
    """Bytes of the canonical UTF-8 form: the size every limit in the engine counts."""
    return len(dumps(value).encode("utf-8"))


def canonicalize(value: JSON) -> JSON:
    """Return the value as it reads back from its canonical text (numbers normalised)."""
    return loads(dumps(value), max_depth=max(DEFAULT_MAX_DEPTH, depth(value)))


__all__ = [
    "DEFAULT_MAX_DEPTH",
    "JSON",
    "canonical_number",
    "canonicalize",
    "content_hash",
    "depth",
    "dumps",
    "loads",
    "size_of",
]
