"""Exact JSON for the SDK: numbers as int/Decimal, never float; hostile input refused.

The server keeps every number exact (DESIGN.md R-2.4); the SDK must not lose precision on
the way there or back. ``loads`` parses integers as ``int`` and every other number as
``Decimal``, and refuses NaN/Infinity, duplicate keys and deep nesting. ``dumps`` writes
compact JSON, keeps key order, spells a ``Decimal`` exactly as ``str()`` does (``1.10``
stays ``1.10``; the server canonicalises) and refuses ``float`` with a ``TypeError``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, NoReturn

JSON = Any
"""A JSON value as this module produces it: None | bool | int | Decimal | str | list | dict.

``Any`` stands for the recursive union, which mypy cannot name.
"""

MAX_DEPTH = 64
"""Deepest nesting ``loads`` accepts (the server's default limit)."""


class JSONDecodeError(ValueError):
    """A document is not acceptable JSON (syntax, NaN/Infinity, duplicate key, nesting)."""


def _reject_constant(name: str) -> NoReturn:
    raise JSONDecodeError(f"{name} is not a JSON number")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise JSONDecodeError(f"duplicate key {key!r} in a JSON object")
        result[key] = value
    return result


def _parse_decimal(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation as exc:  # the JSON grammar excludes this; kept for safety
        raise JSONDecodeError(f"bad number {text!r}") from exc


def _depth(value: JSON) -> int:
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


def loads(data: bytes | str, *, max_depth: int = MAX_DEPTH) -> JSON:
    """Parse one JSON document exactly, or raise ``JSONDecodeError``."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONDecodeError(f"not valid UTF-8 (byte {exc.start})") from exc
    else:
        text = data
    try:
        value = json.loads(
            text,
            parse_float=_parse_decimal,
            parse_int=int,
            parse_constant=_reject_constant,
            object_pairs_hook=_no_duplicates,
        )
    except RecursionError as exc:
        raise JSONDecodeError(f"JSON nests deeper than {max_depth} levels") from exc
    except json.JSONDecodeError as exc:
        raise JSONDecodeError(
            f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    if _depth(value) > max_depth:
        raise JSONDecodeError(f"JSON nests deeper than {max_depth} levels")
    return value


def _encode(value: Any, out: list[str], where: str) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{where}: {value} is not a JSON number")
        out.append(str(value))  # always valid JSON for a finite Decimal: 1.10, 1E+2, -0
    elif isinstance(value, float):
        raise TypeError(
            f"{where}: float {value!r} is not exact; use int or Decimal (e.g. Decimal('1.1'))"
        )
    elif isinstance(value, Mapping):
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise TypeError(f"{where}: JSON object keys must be str, not {type(key).__name__}")
            if index:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _encode(item, out, f"{where}.{key}")
        out.append("}")
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out, f"{where}[{index}]")
        out.append("]")
    else:
        raise TypeError(f"{where}: {type(value).__name__} is not JSON")


def dumps(value: JSON) -> str:
    """Write ``value`` as compact JSON with exact numbers; ``float`` raises ``TypeError``."""
    out: list[str] = []
    _encode(value, out, "$")
    return "".join(out)


def check_exact(value: JSON, where: str = "$") -> None:
    """Raise ``TypeError`` if ``value`` holds a float or anything that is not JSON."""
    _encode(value, [], where)


__all__ = ["JSON", "MAX_DEPTH", "JSONDecodeError", "check_exact", "dumps", "loads"]
