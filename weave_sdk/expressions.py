"""References and conditions: typed helpers for the JSON vocabulary of DESIGN.md §2.

A value anywhere in a step's input is a JSON literal or a reference::

    ref.input("job_id")                 # {"$ref": "input.job_id"}
    ref.step("quote").output("total")   # {"$ref": "steps.quote.output.total"}

A condition is built from the closed vocabulary: ``eq``/``ne``/``lt``/``le``/``gt``/``ge``,
``in_``, ``exists``, ``all_of`` (``and``), ``any_of`` (``or``) and ``not_``; conditions also
combine with ``&``, ``|`` and ``~``. Literal ``True``/``False`` are conditions too.

Numbers must be ``int`` or ``Decimal``: a ``float`` raises ``TypeError`` (it is not exact,
and the engine compares numbers as exact rationals).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from weave_sdk import docformat
from weave_sdk.exactjson import JSON

REF_KEY = "$ref"
COMPARISON_OPERATORS = ("eq", "ne", "lt", "le", "gt", "ge")
ORDERING_OPERATORS = ("lt", "le", "gt", "ge")
OPERATORS = (*COMPARISON_OPERATORS, "in", "exists", "and", "or", "not")
"""The whole condition vocabulary (the server accepts nothing else)."""

# The server's grammar for one path segment: a field name or an array index.
PATH_SEGMENT = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_-]*|0|[1-9][0-9]{0,8})$")
STEP_ID = docformat.STEP_ID  # the format's rule (definition.schema.json)


def _segments(path: Sequence[str | int]) -> tuple[str, ...]:
    out: list[str] = []
    for part in path:
        if isinstance(part, bool) or not isinstance(part, str | int):
            raise TypeError(f"a path segment is a str or an int, not {type(part).__name__}")
        pieces = [str(part)] if isinstance(part, int) else part.split(".")
        for piece in pieces:
            if not PATH_SEGMENT.match(piece):
                raise ValueError(
                    f"path segment {piece!r} is not a field name ([A-Za-z_][A-Za-z0-9_-]*) "
                    "or an array index"
                )
            out.append(piece)
    return tuple(out)


@dataclass(frozen=True)
class Ref:
    """A reference to instance input or to a step's saved output.

    :param path: the reference text, e.g. ``input.job_id`` or ``steps.quote.output.total``.
    """

    path: str

    def __getitem__(self, segment: str | int) -> Ref:
        """A reference one level deeper: ``ref.input("items")[0]``."""
        return Ref(".".join([self.path, *_segments([segment])]))

    def to_json(self) -> dict[str, str]:
        return {REF_KEY: self.path}


@dataclass(frozen=True)
class StepRef:
    """The step half of a reference; ``.output(...)`` completes it."""

    step_id: str

    def output(self, *path: str | int) -> Ref:
        """Reference this step's output, or a field inside it (``"a.b"`` or ``"a", "b"``)."""
        return Ref(".".join(["steps", self.step_id, "output", *_segments(path)]))


class RefBuilder:
    """Builds references; use the module-level instance ``ref``."""

    def input(self, *path: str | int) -> Ref:
        """Reference the instance input, or a field inside it: ``ref.input("job_id")``."""
        return Ref(".".join(["input", *_segments(path)]))

    def step(self, step_id: str) -> StepRef:
        """Reference a step by id: ``ref.step("quote").output("total")``."""
        if not isinstance(step_id, str) or not STEP_ID.match(step_id):
            raise ValueError(f"{step_id!r} is not a step id ([A-Za-z_][A-Za-z0-9_]*, max 64)")
        return StepRef(step_id)


ref = RefBuilder()
"""Reference helpers: ``ref.input(...)`` and ``ref.step(id).output(...)``."""


def value_json(value: Any, where: str = "value") -> JSON:
    """Turn a template value (literals, ``Ref``, nested dicts/lists) into JSON, exactly.

    Raises ``TypeError`` for ``float`` and for anything that is not JSON.
    """
    if isinstance(value, Ref):
        return value.to_json()
    if isinstance(value, Condition):
        raise TypeError(f"{where}: a condition is not a value")
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{where}: {value} is not a JSON number")
        return value
    if isinstance(value, float):
        raise TypeError(
            f"{where}: float {value!r} is not exact; use int or Decimal (e.g. Decimal('1.1'))"
        )
    if isinstance(value, Mapping):
        out: dict[str, JSON] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where}: object keys must be str, not {type(key).__name__}")
            out[key] = value_json(item, f"{where}.{key}")
        return out
    if isinstance(value, list | tuple):
        return [value_json(item, f"{where}[{index}]") for index, item in enumerate(value)]
    raise TypeError(f"{where}: {type(value).__name__} is not a JSON value or a Ref")


class Condition:
    """A condition in the closed vocabulary; ``to_json()`` gives its definition JSON.

    Build one with the helper functions of this module rather than directly. ``&``, ``|``
    and ``~`` combine conditions into ``and``/``or``/``not``.
    """

    __slots__ = ("_doc",)

    def __init__(self, doc: JSON) -> None:
        self._doc = doc

    def to_json(self) -> JSON:
        return self._doc

    def __and__(self, other: Condition | bool) -> Condition:
        return all_of(self, other)

    def __or__(self, other: Condition | bool) -> Condition:
        return any_of(self, other)

    def __invert__(self) -> Condition:
        return not_(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Condition) and self._doc == other._doc

    __hash__ = None  # type: ignore[assignment]  # wraps a dict: equal by value, not hashable

    def __repr__(self) -> str:
        return f"Condition({self._doc!r})"


def condition_json(condition: Condition | bool, where: str = "condition") -> JSON:
    """The JSON of a condition; ``True``/``False`` are literal conditions."""
    if isinstance(condition, Condition):
        return condition.to_json()
    if isinstance(condition, bool):
        return condition
    raise TypeError(f"{where}: expected a Condition or a bool, not {type(condition).__name__}")


def _compare(op: str, a: Any, b: Any) -> Condition:
    return Condition({op: [value_json(a, f"{op}[0]"), value_json(b, f"{op}[1]")]})


def eq(a: Any, b: Any) -> Condition:
    """``a == b`` (JSON equality; numbers as exact rationals; ``true`` never equals ``1``)."""
    return _compare("eq", a, b)


def ne(a: Any, b: Any) -> Condition:
    """``a != b``."""
    return _compare("ne", a, b)


def lt(a: Any, b: Any) -> Condition:
    """``a < b`` (two numbers, or two strings by code point)."""
    return _compare("lt", a, b)


def le(a: Any, b: Any) -> Condition:
    """``a <= b``."""
    return _compare("le", a, b)


def gt(a: Any, b: Any) -> Condition:
    """``a > b``."""
    return _compare("gt", a, b)


def ge(a: Any, b: Any) -> Condition:
    """``a >= b``."""
    return _compare("ge", a, b)


def in_(a: Any, values: Sequence[Any]) -> Condition:
    """``a`` equals one of ``values`` (literals only; a ``Ref`` among them is refused)."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise TypeError("in_() takes a list of literal values")
    items: list[JSON] = []
    for index, item in enumerate(values):
        if isinstance(item, Ref):
            raise ValueError("the values of in_() are literals, not references")
        items.append(value_json(item, f"in[1][{index}]"))
    return Condition({"in": [value_json(a, "in[0]"), items]})


def exists(reference: Ref) -> Condition:
    """True when ``reference`` has a value (the one place a possibly-missing value is fine)."""
    if not isinstance(reference, Ref):
        raise TypeError("exists() takes a Ref")
    return Condition({"exists": reference.to_json()})


def all_of(*conditions: Condition | bool) -> Condition:
    """Every condition holds (``and``); at least one condition."""
    if not conditions:
        raise ValueError("all_of() needs at least one condition")
    return Condition({"and": [condition_json(c) for c in conditions]})


def any_of(*conditions: Condition | bool) -> Condition:
    """At least one condition holds (``or``); at least one condition."""
    if not conditions:
        raise ValueError("any_of() needs at least one condition")
    return Condition({"or": [condition_json(c) for c in conditions]})


def not_(condition: Condition | bool) -> Condition:
    """The condition does not hold (``not``)."""
    return Condition({"not": condition_json(condition)})


__all__ = [
    "COMPARISON_OPERATORS",
    "OPERATORS",
    "ORDERING_OPERATORS",
    "REF_KEY",
    "Condition",
    "Ref",
    "RefBuilder",
    "StepRef",
    "all_of",
    "any_of",
    "condition_json",
    "eq",
    "exists",
    "ge",
    "gt",
    "in_",
    "le",
    "lt",
    "ne",
    "not_",
    "ref",
    "value_json",
]
