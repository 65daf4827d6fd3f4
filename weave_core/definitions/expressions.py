"""References and conditions: the closed vocabulary a definition uses to read data (R-2.4).

A value template is JSON in which ``{"$ref": "input.<path>"}`` or
``{"$ref": "steps.<step_id>.output.<path>"}`` stands for saved data. A condition is
``{"eq"|"ne"|"lt"|"le"|"gt"|"ge": [a, b]}``, ``{"in": [a, [v, ...]]}``, ``{"exists": ref}``,
``{"and": [c, ...]}``, ``{"or": [c, ...]}``, ``{"not": c}`` or a literal ``true``/``false``.

Publish time uses ``template_refs`` / ``condition_refs`` (syntax, and which references need
which type); run time uses ``resolve`` / ``evaluate``. Numbers are compared as exact
rationals (``Decimal`` comparisons with ``int`` and ``Decimal`` are exact, independent of
context precision); no value ever passes through float. No clock, no randomness.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from weave_core.foundation.errors import LimitExceededError, Problem, WeaveError
from weave_core.foundation.exactjson import JSON, size_of

REF_KEY = "$ref"
BINARY_OPERATORS = ("eq", "ne", "lt", "le", "gt", "ge")
ORDERING_OPERATORS = ("lt", "le", "gt", "ge")
OPERATORS = (*BINARY_OPERATORS, "in", "exists", "and", "or", "not")

_SEGMENT = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_-]*|0|[1-9][0-9]{0,8})$")
_STEP_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")

Need = Literal["any", "number", "string", "comparable", "exists"]
"""What a consumer needs of a referenced value: any value, a number, a string, a number or
string (ordering against another reference), or only to test presence (``exists``)."""


class ExpressionError(WeaveError):
    """A reference or condition is malformed; ``problem_code`` is the validation code."""

    code = "expression_invalid"

    def __init__(self, message: str, problem_code: str) -> None:
        super().__init__(message, details={"problem_code": problem_code})
        self.problem_code = problem_code


class MissingValueError(WeaveError):
    """A reference points at data that is not there (no saved output, or no such path)."""

    code = "value_missing"


class ExpressionTypeError(WeaveError):
    """Operands of a comparison have types that cannot be compared (e.g. number vs string)."""

    code = "expression_type_mismatch"


class ValueTooLargeError(LimitExceededError):
    """A constructed value exceeds its size limit."""

    code = "value_too_large"


@dataclass(frozen=True)
class Ref:
    """A parsed reference: ``input.<path>`` or ``steps.<step_id>.output.<path>``."""

    root: Literal["input", "steps"]
    step_id: str | None
    path: tuple[str | int, ...]

    @property
    def text(self) -> str:
        head = "input" if self.root == "input" else f"steps.{self.step_id}.output"
        return ".".join([head, *(str(p) for p in self.path)])


@dataclass(frozen=True)
class RefUse:
    """One use of a reference at a JSON path (relative to the step), and what it needs."""

    path: str
    ref: Ref
    need: Need


def parse_ref(text: object) -> Ref:
    """Parse a reference string; raise ``ExpressionError`` (code ``ref_invalid``) if bad."""
    if not isinstance(text, str) or not text:
        raise ExpressionError("a $ref must be a non-empty string", "ref_invalid")
    parts = text.split(".")
    if parts[0] == "input":
        root: Literal["input", "steps"] = "input"
        step_id = None
        rest = parts[1:]
    elif parts[0] == "steps":
        if len(parts) < 3 or parts[2] != "output":
            raise ExpressionError(
                f"{text!r}: step references have the form steps.<step_id>.output[.<path>]",
                "ref_invalid",
            )
        if not _STEP_ID.match(parts[1]):
            raise ExpressionError(f"{text!r}: {parts[1]!r} is not a step id", "ref_invalid")
        root, step_id, rest = "steps", parts[1], parts[3:]
    else:
        raise ExpressionError(
            f"{text!r}: a reference starts with 'input.' or 'steps.'", "ref_invalid"
        )
    path: list[str | int] = []
    for segment in rest:
        if not _SEGMENT.match(segment):
            raise ExpressionError(
                f"{text!r}: path segment {segment!r} is not a field name or an array index",
                "ref_invalid",
            )
        path.append(int(segment) if segment.isdigit() else segment)
    return Ref(root, step_id, tuple(path))


def is_ref(value: object) -> bool:
    """True for an object whose only key is ``$ref`` (the shape of a reference)."""
    return isinstance(value, Mapping) and REF_KEY in value and len(value) == 1


def _key_path(path: str, key: str) -> str:
    return f"{path}.{key}" if re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key) else f"{path}[{key!r}]"


def _walk_template(template: JSON, path: str) -> Iterator[tuple[str, JSON]]:
    """Yield (path, ``$ref`` value) for every reference-shaped object, depth first."""
    stack: list[tuple[str, JSON]] = [(path, template)]
    while stack:
        here, value = stack.pop()
        if isinstance(value, Mapping):
            if REF_KEY in value:
                yield here, value
                continue
            for key in sorted(value, reverse=True):
                stack.append((_key_path(here, key), value[key]))
        elif isinstance(value, list):
            for index in range(len(value) - 1, -1, -1):
                stack.append((f"{here}[{index}]", value[index]))


def _ref_of(value: Mapping[str, Any], path: str, problems: list[Problem]) -> Ref | None:
    if len(value) != 1:
        problems.append(
            Problem(path, "ref_invalid", "an object with '$ref' must have no other keys")
        )
        return None
    try:
        return parse_ref(value[REF_KEY])
    except ExpressionError as exc:
        problems.append(Problem(path, exc.problem_code, exc.message))
        return None


def template_refs(template: JSON, path: str = "") -> tuple[list[Problem], list[RefUse]]:
    """Check every reference in a value template; return problems and the uses found."""
    problems: list[Problem] = []
    uses: list[RefUse] = []
    for here, value in _walk_template(template, path):
        ref = _ref_of(value, here, problems)
        if ref is not None:
            uses.append(RefUse(here, ref, "any"))
    return problems, uses


def _is_number(value: object) -> bool:
    return isinstance(value, int | Decimal) and not isinstance(value, bool)


def _operand_need(other: JSON) -> Need:
    if _is_number(other):
        return "number"
    if isinstance(other, str):
        return "string"
    return "comparable"


def condition_refs(condition: JSON, path: str = "") -> tuple[list[Problem], list[RefUse]]:
    """Check a condition's vocabulary and arity; return problems and the reference uses."""
    problems: list[Problem] = []
    uses: list[RefUse] = []

    def bad(where: str, message: str) -> None:
        problems.append(Problem(where, "condition_invalid", message))

    def operand(value: JSON, where: str, need: Need) -> None:
        if is_ref(value) or (isinstance(value, Mapping) and REF_KEY in value):
            ref = _ref_of(value, where, problems)
            if ref is not None:
                uses.append(RefUse(where, ref, need))
            return
        sub_problems, sub_uses = template_refs(value, where)
        problems.extend(sub_problems)
        uses.extend(sub_uses)

    def visit(cond: JSON, where: str, depth: int) -> None:
        if depth > 32:
            bad(where, "conditions nest deeper than 32 levels")
            return
        if isinstance(cond, bool):
            return
        if not isinstance(cond, Mapping) or len(cond) != 1:
            bad(where, f"a condition is an object with exactly one operator of {list(OPERATORS)}")
            return
        ((op, arg),) = cond.items()
        here = _key_path(where, op)
        if op in BINARY_OPERATORS:
            if not isinstance(arg, list) or len(arg) != 2:
                bad(here, f"'{op}' takes a list of two operands")
                return
            left, right = arg
            for index, (mine, other) in enumerate(((left, right), (right, left))):
                if op in ORDERING_OPERATORS:
                    if not is_ref(mine) and not (_is_number(mine) or isinstance(mine, str)):
                        bad(f"{here}[{index}]", f"'{op}' compares numbers or strings only")
                        continue
                    need = _operand_need(other) if not is_ref(other) else "comparable"
                else:
                    need = "any"
                operand(mine, f"{here}[{index}]", need)
        elif op == "in":
            if not isinstance(arg, list) or len(arg) != 2 or not isinstance(arg[1], list):
                bad(here, "'in' takes [operand, [value, ...]]")
                return
            operand(arg[0], f"{here}[0]", "any")
            for index, item in enumerate(arg[1]):
                if isinstance(item, Mapping) and REF_KEY in item:
                    bad(f"{here}[1][{index}]", "the values of 'in' are literals")
        elif op == "exists":
            if not is_ref(arg):
                bad(here, "'exists' takes one reference")
                return
            ref = _ref_of(arg, here, problems)
            if ref is not None:
                uses.append(RefUse(here, ref, "exists"))
        elif op in ("and", "or"):
            if not isinstance(arg, list) or not arg:
                bad(here, f"'{op}' takes a non-empty list of conditions")
                return
            for index, item in enumerate(arg):
                visit(item, f"{here}[{index}]", depth + 1)
        elif op == "not":
            visit(arg, here, depth + 1)
        else:
            bad(where, f"unknown operator {op!r}; conditions use {list(OPERATORS)}")

    visit(condition, path, 0)
    return problems, uses


# --- run time -------------------------------------------------------------------------

Lookup = Callable[[Ref], JSON]
"""Returns the saved value a reference points at, or raises ``MissingValueError``."""


def follow(value: JSON, path: Sequence[str | int], where: str) -> JSON:
    """Walk ``path`` into ``value``; raise ``MissingValueError`` naming ``where`` if absent."""
    current = value
    for segment in path:
        if isinstance(current, Mapping) and isinstance(segment, str) and segment in current:
            current = current[segment]
        elif isinstance(current, Mapping) and isinstance(segment, int) and str(segment) in current:
            current = current[str(segment)]
        elif isinstance(current, list) and isinstance(segment, int) and segment < len(current):
            current = current[segment]
        else:
            raise MissingValueError(
                f"{where}: no value at {segment!r}", details={"reference": where}
            )
    return current


def json_equal(a: JSON, b: JSON) -> bool:
    """Deep JSON equality; numbers equal as rationals; ``true`` never equals ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if _is_number(a) or _is_number(b):
        return _is_number(a) and _is_number(b) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, float) or isinstance(b, float):
        raise TypeError("floats are not exact values")
    return False


def compare(a: JSON, b: JSON) -> int:
    """Order two numbers (exact rationals) or two strings (code points): -1, 0 or 1."""
    if (_is_number(a) and _is_number(b)) or (isinstance(a, str) and isinstance(b, str)):
        greater: bool = a > b
        less: bool = a < b
        return int(greater) - int(less)
    raise ExpressionTypeError(
        f"cannot order {type(a).__name__} and {type(b).__name__}",
        details={"left": type(a).__name__, "right": type(b).__name__},
    )


def resolve(template: JSON, lookup: Lookup, *, max_bytes: int | None = None) -> JSON:
    """Replace every reference in ``template`` by its value; the result keeps exact numbers."""

    def build(value: JSON) -> JSON:
        if isinstance(value, Mapping):
            if is_ref(value):
                return lookup(parse_ref(value[REF_KEY]))
            return {key: build(item) for key, item in value.items()}
        if isinstance(value, list):
            return [build(item) for item in value]
        return value

    result = build(template)
    if max_bytes is not None:
        size = size_of(result)
        if size > max_bytes:
            raise ValueTooLargeError(
                f"constructed value of {size} bytes exceeds the limit of {max_bytes} bytes",
                details={"size_bytes": size, "limit_bytes": max_bytes},
            )
    return result


def evaluate(condition: JSON, lookup: Lookup) -> bool:
    """Evaluate a condition exactly. Missing data is an error except under ``exists``."""
    if isinstance(condition, bool):
        return condition
    if not isinstance(condition, Mapping) or len(condition) != 1:
        raise ExpressionError("malformed condition", "condition_invalid")
    ((op, arg),) = condition.items()

    def value(operand: JSON) -> JSON:
        return resolve(operand, lookup)

    if op in BINARY_OPERATORS:
        left, right = value(arg[0]), value(arg[1])
        if op == "eq":
            return json_equal(left, right)
        if op == "ne":
            return not json_equal(left, right)
        order = compare(left, right)
        return {"lt": order < 0, "le": order <= 0, "gt": order > 0, "ge": order >= 0}[op]
    if op == "in":
        needle = value(arg[0])
        return any(json_equal(needle, item) for item in arg[1])
    if op == "exists":
        try:
            lookup(parse_ref(arg[REF_KEY]))
        except MissingValueError:
            return False
        return True
    if op == "and":
        return all(evaluate(item, lookup) for item in arg)
    if op == "or":
        return any(evaluate(item, lookup) for item in arg)
    if op == "not":
        return not evaluate(arg, lookup)
    raise ExpressionError(f"unknown operator {op!r}", "condition_invalid")


__all__ = [
    "BINARY_OPERATORS",
    "OPERATORS",
    "REF_KEY",
    "ExpressionError",
    "ExpressionTypeError",
    "Lookup",
    "MissingValueError",
    "Need",
    "Ref",
    "RefUse",
    "ValueTooLargeError",
    "compare",
    "condition_refs",
    "evaluate",
    "follow",
    "is_ref",
    "json_equal",
    "parse_ref",
    "resolve",
    "template_refs",
]
