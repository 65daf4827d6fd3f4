"""Local validation of references: where a step sits, and whether a ``$ref`` may read it.

A ``$ref`` is legal when its target's output is surely saved when the reading step runs:
earlier in the same list, or in a finished composite (a ``branch`` case only under
``exists``). The paths and codes are the server's (``weave_core.validation``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from weave_sdk import docformat
from weave_sdk.exactjson import JSON
from weave_sdk.expressions import PATH_SEGMENT, REF_KEY, STEP_ID

Need = Literal["value", "exists"]
Composite = tuple[str, str, str | int]
"""(composite step id, its kind, the block inside it: case index or branch name)."""


key_path = docformat.key_path


@dataclass(frozen=True)
class _StepInfo:
    id: str
    kind: str
    order: int
    chain: tuple[Composite, ...]
    path: str


@dataclass(frozen=True)
class _RefUse:
    path: str
    step_id: str
    owner: _StepInfo
    need: Need



def _placement(use: _RefUse, target: _StepInfo) -> tuple[str | None, str]:
    """Whether ``target``'s output is surely saved when ``use.owner`` runs."""
    owner = use.owner
    name = f"'{target.id}'"
    if target.id == owner.id or target.order == owner.order:
        return "ref_forward", f"a step cannot read its own output ({name})"
    if any(c[0] == owner.id for c in target.chain):
        return "ref_forward", f"step {name} runs inside this step, after it starts"
    if any(c[0] == target.id for c in owner.chain):
        return "ref_forward", f"step {name} encloses this step and has not finished"
    common = 0
    for mine, theirs in zip(owner.chain, target.chain, strict=False):
        if mine != theirs:
            break
        common += 1
    if common < len(owner.chain) and common < len(target.chain):
        mine, theirs = owner.chain[common], target.chain[common]
        if mine[0] == theirs[0]:
            what = "branch" if mine[1] == "parallel" else "case"
            return "ref_cross_branch", (
                f"step {name} is in another {what} ({theirs[2]!r}) of step '{mine[0]}'"
            )
    if target.order > owner.order:
        return "ref_forward", f"step {name} runs after this step"
    if use.need != "exists":
        for composite in target.chain[common:]:
            if composite[1] == "branch":
                return "ref_not_guaranteed", (
                    f"step {name} is inside a case of branch '{composite[0]}' and may not have "
                    f"run; read it under exists(...)"
                )
    return None, ""



def parse_ref(text: Any) -> tuple[str | None, str | None]:
    """Check a ``$ref`` string: ``(error, None)`` or ``(None, step_id or None for input)``."""
    if not isinstance(text, str) or not text:
        return "a $ref must be a non-empty string", None
    parts = text.split(".")
    step_id: str | None = None
    if parts[0] == "input":
        rest = parts[1:]
    elif parts[0] == "steps":
        if len(parts) < 3 or parts[2] != "output":
            return f"{text!r}: step references have the form steps.<step_id>.output[.<path>]", None
        if not STEP_ID.match(parts[1]):
            return f"{text!r}: {parts[1]!r} is not a step id", None
        step_id, rest = parts[1], parts[3:]
    else:
        return f"{text!r}: a reference starts with 'input' or 'steps.'", None
    for segment in rest:
        if not PATH_SEGMENT.match(segment):
            return f"{text!r}: path segment {segment!r} is not a field name or an array index", None
    return None, step_id


def _template_refs(value: JSON, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(path, ref object) for every ``$ref``-shaped object in a template, in order."""
    if isinstance(value, Mapping):
        if REF_KEY in value:
            yield path, value
            return
        for key, item in value.items():
            yield from _template_refs(item, key_path(path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _template_refs(item, f"{path}[{index}]")


def _walk(value: JSON) -> Iterator[JSON]:
    stack = [value]
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _is_number(value: Any) -> bool:
    if isinstance(value, Decimal):
        return value.is_finite()
    return isinstance(value, int) and not isinstance(value, bool)


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    return None


def _is_status(value: Any) -> bool:
    """A classify value: a string or an integer (a bool is neither)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


