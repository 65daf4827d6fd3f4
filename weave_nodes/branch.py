"""The ``branch`` kind: choose exactly one case, once, by the first condition that holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, model_validator

from weave_core.definitions.expressions import (
    REF_KEY,
    ExpressionError,
    MissingValueError,
    Ref,
    condition_refs,
    evaluate,
    is_ref,
    json_equal,
)
from weave_core.foundation.exactjson import JSON
from weave_core.planning.plan import PlanRejectedError, RejectReason
from weave_core.plugins.nodespec import (
    CheckContext,
    Command,
    EnterBlocks,
    JsonSchema,
    NodeKind,
    Scope,
    hookimpl,
)
from weave_nodes._common import ConfigModel, check_at_most, schema_of


class Case(ConfigModel):
    """``{"when": condition, "steps": [...]}`` or, last, ``{"default": true, "steps": [...]}``."""

    when: Any = None
    default: Literal[True] | None = None
    steps: list[Any]

    @model_validator(mode="after")
    def _when_or_default(self) -> Case:
        if ("when" in self.model_fields_set) == (self.default is not None):
            raise ValueError("a case has either 'when' or 'default': true (exactly one)")
        return self


class BranchConfig(ConfigModel):
    cases: list[Case]


def block_name(index: int) -> str:
    """The block of case ``index``: ``case0``, ``case1``, …"""
    return f"case{index}"


def _no_lookup(ref: Ref) -> JSON:
    raise MissingValueError(f"{ref.text} is not known at publish time")


def _constant(condition: JSON) -> bool | None:
    """The value of a condition without references, or ``None`` when it reads data."""
    problems, uses = condition_refs(condition)
    if problems or uses:
        return None
    try:
        return evaluate(condition, _no_lookup)
    except (ExpressionError, MissingValueError, TypeError):
        return None
    except Exception:  # e.g. ordering a number against a string: not a constant we can use
        return None


def _tested_values(condition: JSON) -> tuple[str, list[JSON]] | None:
    """``(ref text, values)`` of ``{"eq": [ref, v]}`` (either order) or ``{"in": [ref, [..]]}``."""
    if not isinstance(condition, Mapping) or len(condition) != 1:
        return None
    ((op, arg),) = condition.items()
    if not isinstance(arg, list) or len(arg) != 2:
        return None
    if op == "eq":
        left, right = arg
        if is_ref(left) and not is_ref(right):
            return str(left[REF_KEY]), [right]
        if is_ref(right) and not is_ref(left):
            return str(right[REF_KEY]), [left]
    if op == "in" and is_ref(arg[0]) and isinstance(arg[1], list):
        return str(arg[0][REF_KEY]), list(arg[1])
    return None


def _enumerated(schema: JsonSchema | None) -> list[JSON] | None:
    """Every value a declared schema allows, when it is a finite set (enum, const, boolean)."""
    if schema is None:
        return None
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    if schema.get("type") == "boolean":
        return [True, False]
    return None


def _covers(values: Sequence[JSON], covered: Sequence[JSON]) -> bool:
    return all(any(json_equal(v, c) for c in covered) for v in values)


class BranchKind(NodeKind):
    """Block policy ``one``: the first case whose ``when`` holds runs; the default otherwise."""

    kind = "branch"
    config_model = BranchConfig
    block_policy = "one"

    def blocks(self, config: BaseModel) -> Mapping[str, Sequence[JSON]]:
        assert isinstance(config, BranchConfig)
        return {block_name(i): case.steps for i, case in enumerate(config.cases)}

    def block_path(self, config: BaseModel, block: str) -> str:
        return f".cases[{int(block.removeprefix('case'))}].steps"

    def check(self, config: BaseModel, ctx: CheckContext) -> None:
        assert isinstance(config, BranchConfig)
        if not config.cases:
            ctx.problem(".cases", "branch_empty", "a branch needs at least one case")
            return
        check_at_most(ctx, len(config.cases), "max_branch_cases", ".cases", "the number of cases")
        total = False  # once true, every later case is unreachable
        covered: dict[str, list[JSON]] = {}
        for index, case in enumerate(config.cases):
            here = f".cases[{index}]"
            if total:
                ctx.problem(
                    here,
                    "branch_unreachable_case",
                    "this case can never be chosen: an earlier case always holds",
                )
            if case.default:
                total = True
                continue
            ctx.check_condition(case.when, f"{here}.when")
            constant = _constant(case.when)
            if constant is False and not total:
                ctx.problem(
                    f"{here}.when", "branch_unreachable_case", "this condition is always false"
                )
            if constant is True:
                total = True
                continue
            tested = _tested_values(case.when)
            if tested is None:
                continue
            ref_text, values = tested
            earlier = covered.setdefault(ref_text, [])
            if earlier and _covers(values, earlier) and not total:
                ctx.problem(
                    f"{here}.when",
                    "branch_unreachable_case",
                    f"earlier cases already cover every value this case tests on {ref_text}",
                )
            earlier.extend(values)
            allowed = _enumerated(schema_of(ctx, {REF_KEY: ref_text}))
            if allowed is not None and _covers(allowed, earlier):
                total = True
        if not total:
            ctx.problem(
                ".cases",
                "branch_not_exhaustive",
                'the cases are not provably exhaustive: add {"default": true, "steps": [...]} '
                "last, or cover every value of a boolean or enum reference",
            )

    def output_schema(
        self, config: BaseModel, block_outputs: Mapping[str, JsonSchema | None]
    ) -> JsonSchema | None:
        return None  # depends on the case chosen at run time

    # run time

    def activate(self, config: BaseModel, scope: Scope) -> Command:
        """Choose the first case that holds, once; the index is saved as ``{"case": i}``."""
        assert isinstance(config, BranchConfig)
        for index, case in enumerate(config.cases):
            if case.default or scope.evaluate(case.when):
                return EnterBlocks((block_name(index),), {"case": index})
        raise PlanRejectedError(
            RejectReason.NO_CASE_MATCHED, "no case of the branch holds and it has no default"
        )

    def combine(self, config: BaseModel, decision: JSON, block_outputs: Mapping[str, JSON]) -> JSON:
        """The output of the chosen case's last step (``null`` for an empty case)."""
        case = decision.get("case") if isinstance(decision, Mapping) else None
        name = block_name(case) if isinstance(case, int) and not isinstance(case, bool) else None
        if name is None or name not in block_outputs:
            raise PlanRejectedError(
                RejectReason.INPUT_STATE_INVALID,
                f"the saved branch decision {decision!r} does not name the entered case",
            )
        return block_outputs[name]


@hookimpl
def weave_register_node_kinds() -> list[type[NodeKind]]:
    return [BranchKind]


__all__ = ["BranchConfig", "BranchKind", "Case", "block_name", "weave_register_node_kinds"]
