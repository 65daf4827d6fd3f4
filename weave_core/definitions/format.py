"""Definition documents (schema_version 1): top-level structure, validation, canonical form.

:func:`validate_definition` reports every problem at once (a JSON path, a stable code from
:data:`PROBLEM_CODES`, a message) and returns a :class:`ValidatedDefinition`: the submitted
document canonicalised (nothing filled in), its content hash, and the parsed step tree the
decision core compiles. The step tree and reference checks live in ``weave_core.validation``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Final

from jsonschema import Draft202012Validator

from weave_core.definitions.validation import Block, StepNode, TreeValidator, key_path
from weave_core.foundation.errors import InvalidJsonError, Problem, ValidationError
from weave_core.foundation.exactjson import JSON, canonicalize, content_hash, size_of
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.plugins.nodespec import JsonSchema

SCHEMA_VERSION: Final = 1

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

TOP_LEVEL_FIELDS: Final = (
    "schema_version",
    "definition_id",
    "version",
    "input_schema",
    "deadline_seconds",
    "failure_policy",
    "limits",
    "steps",
)
REQUIRED_FIELDS: Final = ("schema_version", "definition_id", "version", "steps")
FAILURE_POLICIES: Final = ("REVIEW", "FAIL_AFTER_SETTLED")
DEFINITION_LIMITS: Final = (
    "max_steps",
    "max_nesting",
    "max_parallel_width",
    "max_branch_cases",
    "max_poll_rounds",
    "max_poll_attempts_total",
    "max_task_attempts",
    "max_value_bytes",
    "max_deadline_seconds",
)
"""Limits a definition may tighten in its ``limits`` object (never loosen)."""
RESERVED_VERSIONS: Final = ("latest",)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
"""Definition ids and versions: letters, digits, ``.``, ``_``, ``-``; no leading punctuation."""


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


def _check_name(value: JSON, path: str, what: str, limits: Limits, problems: list[Problem]) -> None:
    if not isinstance(value, str) or not _NAME.match(value) or len(value) > limits.max_id_length:
        problems.append(
            Problem(
                path,
                "invalid_id",
                f"{what} must be a string of letters, digits, '.', '_' or '-' (not starting "
                f"with punctuation), at most {limits.max_id_length} characters; got {value!r}",
            )
        )
    elif what == "version" and value in RESERVED_VERSIONS:
        problems.append(
            Problem(path, "invalid_id", f"{value!r} is reserved and cannot be a version")
        )


def _effective_limits(
    document: Mapping[str, JSON], limits: Limits, problems: list[Problem]
) -> dict[str, int]:
    effective = {f.name: limits.get(f.name) for f in fields(limits)}
    raw = document.get("limits")
    if raw is None and "limits" not in document:
        return effective
    if not isinstance(raw, Mapping):
        problems.append(Problem("$.limits", "invalid_field", "limits must be an object"))
        return effective
    for name, value in raw.items():
        here = key_path("$.limits", name)
        if name not in DEFINITION_LIMITS:
            problems.append(
                Problem(
                    here, "unknown_field", f"a definition may set {', '.join(DEFINITION_LIMITS)}"
                )
            )
        elif not _is_int(value) or value <= 0:
            problems.append(Problem(here, "invalid_field", f"{name} must be a positive integer"))
        elif value > effective[name]:
            problems.append(
                Problem(
                    here,
                    "limit_exceeded",
                    f"{name} is {value}; the engine allows at most {effective[name]} "
                    "(a definition may only tighten limits)",
                )
            )
        else:
            effective[name] = value
    return effective


def _check_top_level(
    document: Mapping[str, JSON],
    limits: Limits,
    effective: Mapping[str, int],
    problems: list[Problem],
) -> None:
    for name in REQUIRED_FIELDS:
        if name not in document:
            problems.append(Problem(f"$.{name}", "missing_field", f"'{name}' is required"))
    for name in document:
        if name not in TOP_LEVEL_FIELDS:
            problems.append(
                Problem(
                    key_path("$", name),
                    "unknown_field",
                    f"unknown field; a definition has {', '.join(TOP_LEVEL_FIELDS)}",
                )
            )
    if "definition_id" in document:
        _check_name(document["definition_id"], "$.definition_id", "definition_id", limits, problems)
    if "version" in document:
        _check_name(document["version"], "$.version", "version", limits, problems)
    if "deadline_seconds" in document:
        deadline = document["deadline_seconds"]
        if not _is_int(deadline) or deadline <= 0:
            problems.append(
                Problem(
                    "$.deadline_seconds",
                    "invalid_field",
                    "deadline_seconds must be a positive integer",
                )
            )
        elif deadline > effective["max_deadline_seconds"]:
            problems.append(
                Problem(
                    "$.deadline_seconds",
                    "limit_exceeded",
                    f"deadline_seconds is {deadline}; the limit max_deadline_seconds is "
                    f"{effective['max_deadline_seconds']}",
                )
            )
    if "failure_policy" in document and document["failure_policy"] not in FAILURE_POLICIES:
        problems.append(
            Problem(
                "$.failure_policy",
                "invalid_field",
                f"failure_policy must be one of {', '.join(FAILURE_POLICIES)}",
            )
        )
    if "input_schema" in document:
        schema = document["input_schema"]
        if not isinstance(schema, Mapping):
            problems.append(
                Problem("$.input_schema", "input_schema_invalid", "input_schema must be an object")
            )
        else:
            meta = Draft202012Validator(Draft202012Validator.META_SCHEMA)
            for error in meta.iter_errors(schema):
                where = "".join(
                    f"[{p}]" if isinstance(p, int) else key_path("", p) for p in error.absolute_path
                )
                problems.append(
                    Problem(f"$.input_schema{where}", "input_schema_invalid", error.message)
                )


def validate_definition(document: JSON, host: PluginHost, limits: Limits) -> ValidatedDefinition:
    """Validate a schema_version 1 document; raise ``ValidationError`` listing every problem."""
    try:
        canonical = canonicalize(document)
    except (TypeError, InvalidJsonError) as exc:
        raise ValidationError(
            "the definition is not exact JSON",
            [Problem("$", "invalid_field", f"not exact JSON: {exc}")],
        ) from exc
    if not isinstance(canonical, dict):
        raise ValidationError(
            "the definition must be a JSON object",
            [Problem("$", "invalid_field", "a definition is a JSON object")],
        )
    version = canonical.get("schema_version")
    if "schema_version" in canonical and (not _is_int(version) or version != SCHEMA_VERSION):
        raise ValidationError(
            "unsupported schema_version",
            [
                Problem(
                    "$.schema_version",
                    "schema_version_unsupported",
                    f"schema_version {version!r} is not supported; this engine reads "
                    f"{SCHEMA_VERSION}",
                )
            ],
        )
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
    effective = _effective_limits(canonical, limits, problems)
    _check_top_level(canonical, limits, effective, problems)
    input_schema = canonical.get("input_schema")
    if not isinstance(input_schema, Mapping) or any(
        p.path.startswith("$.input_schema") for p in problems
    ):
        input_schema = None
    tree = TreeValidator(host.kinds(), effective, input_schema)
    steps = canonical.get("steps")
    parsed: tuple[StepNode, ...] | None = None
    if "steps" in canonical:
        if not isinstance(steps, list) or not steps:
            problems.append(Problem("$.steps", "invalid_field", "steps must be a non-empty list"))
        else:
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
