"""Definition documents (schema_version 1): top-level structure, validation, canonical form.

:func:`validate_definition` reports every problem at once (a JSON path, a stable code from
:data:`PROBLEM_CODES`, a message) and returns a :class:`ValidatedDefinition`: the submitted
document canonicalised (nothing filled in), its content hash, and the parsed step tree the
decision core compiles. The top-level rules are the SDK's (``weave_sdk.docformat``: the JSON
Schema docs/definition.schema.json), so local and server validation agree; the step tree and
reference checks, which need the node plugins, live in ``weave_core.definitions.validation``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Final

from weave_core.definitions.validation import Block, StepNode, TreeValidator
from weave_core.foundation.errors import Problem, ValidationError
from weave_core.foundation.exactjson import JSON, content_hash, size_of
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.plugins.nodespec import JsonSchema
from weave_sdk import docformat
from weave_sdk.errors import Problem as SdkProblem

SCHEMA_VERSION: Final = docformat.SCHEMA_VERSION

PROBLEM_CODES: Final[Mapping[str, str]] = MappingProxyType(
    {
        # document structure
        "schema_version_unsupported": "schema_version is not 1 (the one version this engine reads)",
        "missing_field": "a required field is absent",
        "invalid_field": "a field has the wrong type or an invalid value",
        "unknown_field": "a field that the format (or the step's kind) does not define",
        "invalid_id": "a definition id, version or step id breaks the identifier rules",
        "duplicate_step_id": "two steps share an id (ids are unique across the whole tree)",
        "unknown_kind": "no installed node plugin serves the step's kind",
        "plugin_failed": "the node plugin serving the step raised an error while checking it",
        "input_schema_invalid": "input_schema is not a valid JSON Schema (Draft 2020-12)",
        "output_schema_invalid": "a task's output_schema is not a valid JSON Schema (2020-12)",
        # references and conditions
        "ref_invalid": "a $ref is malformed (not input.<path> or steps.<id>.output.<path>)",
        "ref_unknown_step": "a reference names a step id that does not exist",
        "ref_forward": "a reference reads the step itself, a step inside it, its enclosing step "
        "or a later step (an order violation or cycle)",
        "ref_cross_branch": "a reference reads a step of a sibling branch of the same composite",
        "ref_not_guaranteed": "a reference reads a step inside a branch case from outside that "
        "case (allowed only as the operand of 'exists')",
        "ref_unknown_field": "a reference reads a field the producer's declared schema rules out",
        "ref_type_mismatch": "a referenced value is declared with a type its use cannot take",
        "condition_invalid": "a condition breaks the closed vocabulary or an operator's arity",
        # composites and reachability
        "branch_empty": "a branch step has no cases",
        "branch_not_exhaustive": "no default case and its cases are not provably total",
        "branch_unreachable_case": "a branch case can never be chosen (after a default or a total "
        "case, already covered, or a condition that is always false)",
        "parallel_empty": "a parallel step has no branches, or a branch without steps",
        "parallel_too_wide": "a parallel step has more branches than max_parallel_width",
        # limits
        "poll_budget_too_large": "a poll's max_rounds, or max_rounds x attempts_per_round, is "
        "above max_poll_rounds / max_poll_attempts_total",
        "too_many_steps": "the definition has more steps than max_steps",
        "nesting_too_deep": "composites nest deeper than max_nesting",
        "value_too_large": "a value template is larger than max_value_bytes",
        "definition_too_large": "the canonical document is larger than max_definition_bytes",
        "limit_exceeded": "a value is above another engine limit (named in the message)",
    }
)
"""Every validation code the engine reports, with its meaning. Codes are a public contract."""

# The top-level rules live once, in the SDK (docs/definition.schema.json):
# these names are read from it.
TOP_LEVEL_FIELDS: Final = docformat.TOP_LEVEL_FIELDS
REQUIRED_FIELDS: Final = docformat.REQUIRED_FIELDS
FAILURE_POLICIES: Final = docformat.FAILURE_POLICIES
DEFINITION_LIMITS: Final = docformat.DEFINITION_LIMITS
"""Limits a definition may tighten in its ``limits`` object (never loosen)."""
RESERVED_VERSIONS: Final = docformat.RESERVED_VERSIONS


@dataclass(frozen=True, eq=False)
class ValidatedDefinition:
    """A definition that passed validation. ``document`` is exactly what is stored."""

    definition_id: str
    version: str
    document: JSON
    """The submitted document, canonicalised (sorted keys, exact numbers); no defaults added."""
    content_hash: str
    input_schema: JsonSchema | None
    deadline_seconds: int | None
    """Instance deadline from start; ``None``: the engine's ``max_deadline_seconds``."""
    failure_policy: str
    limits: Mapping[str, int]
    """The effective definition-time limits (engine limits tightened by the document)."""
    steps: tuple[StepNode, ...]

    def walk(self) -> Iterator[StepNode]:
        """Every step in document order (composites before their children)."""
        for step in self.steps:
            yield from step.walk()

    def step(self, step_id: str) -> StepNode:
        """The step called ``step_id``; ``KeyError`` if none."""
        for node in self.walk():
            if node.id == step_id:
                return node
        raise KeyError(step_id)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_definition(document: JSON, host: PluginHost, limits: Limits) -> ValidatedDefinition:
    """Validate a schema_version 1 document; raise ``ValidationError`` listing every problem."""
    canonical, stop, summary = docformat.gate(document)
    if canonical is None:
        assert stop is not None
        raise ValidationError(summary, [_engine(stop)])
    problems: list[Problem] = []
    size = size_of(canonical)
    if size > limits.max_definition_bytes:
        problems.append(
            Problem(
                "$",
                "definition_too_large",
                f"the canonical document is {size} bytes; the limit max_definition_bytes is "
                f"{limits.max_definition_bytes}",
            )
        )
    found, effective = docformat.top_level_problems(
        canonical, {f.name: limits.get(f.name) for f in fields(limits)}
    )
    problems.extend(_engine(p) for p in found)
    input_schema = canonical.get("input_schema")
    if not isinstance(input_schema, Mapping) or any(
        p.path.startswith("$.input_schema") for p in problems
    ):
        input_schema = None
    tree = TreeValidator(host.kinds(), effective, input_schema)
    steps = canonical.get("steps")
    parsed: tuple[StepNode, ...] | None = None
    if isinstance(steps, list) and steps:  # otherwise a top-level problem already says so
        parsed = tree.run(steps, "$.steps")
        problems.extend(tree.problems)
    if problems or parsed is None:
        raise ValidationError(f"the definition has {len(problems)} problem(s)", _dedupe(problems))
    deadline = canonical.get("deadline_seconds")
    return ValidatedDefinition(
        definition_id=canonical["definition_id"],
        version=canonical["version"],
        document=canonical,
        content_hash=content_hash(canonical),
        input_schema=input_schema,
        deadline_seconds=deadline if _is_int(deadline) else None,
        failure_policy=canonical.get("failure_policy", "REVIEW"),
        limits=MappingProxyType({name: effective[name] for name in DEFINITION_LIMITS}),
        steps=parsed,
    )


def _engine(problem: SdkProblem) -> Problem:
    return Problem(problem.path, problem.code, problem.message)


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[Problem] = set()
    unique = []
    for problem in problems:
        if problem not in seen:
            seen.add(problem)
            unique.append(problem)
    return unique


__all__ = [
    "DEFINITION_LIMITS",
    "FAILURE_POLICIES",
    "PROBLEM_CODES",
    "SCHEMA_VERSION",
    "TOP_LEVEL_FIELDS",
    "Block",
    "StepNode",
    "ValidatedDefinition",
    "validate_definition",
]
