"""The exact JSON writer behind ``weave_sdk.exactjson``'s ``dumps`` and ``canonical_dumps``:
numbers spelled exactly (one spelling per rational in the canonical form), floats and
non-finite numbers refused with the path where they stand. Kept apart from the reader so
that each stays short; ``exactjson`` is the public face of both."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from json.encoder import encode_basestring
from typing import Any


class NotJSONError(Exception):
    """A value cannot be written as exact JSON; ``path`` is where (``$.a[0]``)."""

    def __init__(self, reason: str, *, not_finite: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.not_finite = not_finite
        self.segments: list[str] = []

    @property
    def path(self) -> str:
        return "$" + "".join(reversed(self.segments))

    def public(self) -> TypeError | ValueError:
        """The ``TypeError`` (or, for NaN/Infinity, ``ValueError``) callers see."""
        message = f"{self.path}: {self.reason}"
        return ValueError(message) if self.not_finite else TypeError(message)


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
        raise NotJSONError(f"{value} is not a JSON number", not_finite=True)
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


def _plain_number(value: int | Decimal) -> str:
    if isinstance(value, Decimal) and not value.is_finite():
        raise NotJSONError(f"{value} is not a JSON number", not_finite=True)
    return str(value)  # always valid JSON for a finite Decimal: 1.10, 1E+2, -0


_string = encode_basestring
"""A string as JSON: exactly ``json.dumps(text, ensure_ascii=False)`` (the same C function
it ends in), without building an encoder per call — strings are most of what a document
holds, and this is 8x cheaper."""


def encode(value: Any, out: list[str], canonical: bool) -> None:
    """Append ``value``'s JSON to ``out``; a refusal carries its path (built on error only).

    The exact types a document is made of (``str``, ``dict``, ``list``, ``int``, ``None``,
    ``bool``) are told apart by ``type()`` first, and a string member of an object or an
    array is written without a call of its own; anything else (a ``Decimal``, a subclass,
    another mapping or sequence, what is refused) takes :func:`_encode_other`. Why: the
    engine writes a dozen documents a step and answers every request with one, and
    ``isinstance`` against the ``Mapping`` and ``Sequence`` ABCs was most of their cost.
    """
    kind = type(value)
    if kind is str:
        out.append(_string(value))
    elif kind is dict:
        _encode_object(value, out, canonical)
    elif kind is list:
        _encode_array(value, out, canonical)
    elif kind is int:  # exactly int: a bool is not (canonical_number(int) is str(int))
        out.append(str(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    else:
        _encode_other(value, out, canonical)


def _encode_object(value: Mapping[Any, Any], out: list[str], canonical: bool) -> None:
    out.append("{")
    for index, key in enumerate(sorted(value) if canonical else value):
        if not isinstance(key, str):
            raise NotJSONError(f"JSON object keys must be str, not {type(key).__name__}")
        out.append(("," if index else "") + _string(key) + ":")
        item = value[key]
        if type(item) is str:
            out.append(_string(item))
            continue
        try:
            encode(item, out, canonical)
        except NotJSONError as exc:
            exc.segments.append(f".{key}")
            raise
    out.append("}")


def _encode_array(value: Sequence[Any], out: list[str], canonical: bool) -> None:
    out.append("[")
    for index, item in enumerate(value):
        if index:
            out.append(",")
        if type(item) is str:
            out.append(_string(item))
            continue
        try:
            encode(item, out, canonical)
        except NotJSONError as exc:
            exc.segments.append(f"[{index}]")
            raise
    out.append("]")


def _encode_other(value: Any, out: list[str], canonical: bool) -> None:
    """Everything :func:`_encode` does not tell apart by its exact type."""
    if isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, int | Decimal):
        out.append(canonical_number(value) if canonical else _plain_number(value))
    elif isinstance(value, float):
        raise NotJSONError(
            f"float {value!r} is not exact; use int or Decimal (e.g. Decimal('1.1'))"
        )
    elif isinstance(value, Mapping):
        _encode_object(value, out, canonical)
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        _encode_array(value, out, canonical)
    else:
        raise NotJSONError(f"{type(value).__name__} is not JSON")


def write(value: Any, canonical: bool) -> str:
    """``value`` as exact JSON (``canonical``: sorted keys, one spelling per number); a
    refusal is the ``TypeError`` or ``ValueError`` of :meth:`NotJSONError.public`."""
    out: list[str] = []
    try:
        encode(value, out, canonical)
    except NotJSONError as exc:
        raise exc.public() from None
    return "".join(out)


__all__ = ["NotJSONError", "canonical_number", "encode", "write"]
