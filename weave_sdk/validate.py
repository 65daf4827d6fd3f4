"""Local validation: the structural rules of a definition that need no server.

``validate(definition)`` reports every problem at once, each with a JSON path (like
``$.steps[1].cases[0].when``), a stable code from ``PROBLEM_CODES`` and a message. The
server validates again at publish time with the same codes, and more: what needs the
installed plugins (third-party kinds' fields) or the database is only checked there.
Kinds other than the six built-in ones pass through unflagged: they may exist server-side.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from weave_sdk import docformat
from weave_sdk._local_kinds import _Kinds
from weave_sdk._local_refs import Composite, _placement, _StepInfo, _walk, key_path, parse_ref
from weave_sdk._local_rules import (
    _KIND_FIELDS,
    DEFAULT_LIMITS,
    PROBLEM_CODES,
)
from weave_sdk._local_rules import DEFAULT_BACKOFF_SECONDS as DEFAULT_BACKOFF_SECONDS
from weave_sdk._local_rules import DEFAULT_MAX_BACKOFF_SECONDS as DEFAULT_MAX_BACKOFF_SECONDS
from weave_sdk._local_rules import FAILURE_POLICIES as FAILURE_POLICIES
from weave_sdk._local_rules import MAX_CONDITION_DEPTH as MAX_CONDITION_DEPTH
from weave_sdk._local_rules import MAX_DEADLINE_SECONDS as MAX_DEADLINE_SECONDS
from weave_sdk._local_rules import MAX_ID_LENGTH as MAX_ID_LENGTH
from weave_sdk._local_rules import MAX_POLL_ATTEMPTS_TOTAL as MAX_POLL_ATTEMPTS_TOTAL
from weave_sdk._local_rules import MAX_POLL_ROUNDS as MAX_POLL_ROUNDS
from weave_sdk._local_rules import MAX_TASK_ATTEMPTS as MAX_TASK_ATTEMPTS
from weave_sdk._local_rules import RESERVED_VERSIONS as RESERVED_VERSIONS
from weave_sdk.definition import Workflow
from weave_sdk.errors import Problem


@dataclass
class _Validator(_Kinds):
    """The document walk: the top level (``docformat``), step lists, composites, references."""

    # --- document --------------------------------------------------------------------

    def document(self, doc: Any) -> None:
        canonical, stop, _ = docformat.gate(doc)
        if canonical is None:  # nothing else is checked (another version may mean otherwise)
            assert stop is not None
            self.problems.append(stop)
            return
        found, self.limits = docformat.top_level_problems(canonical, DEFAULT_LIMITS)
        self.problems.extend(found)
        steps = canonical.get("steps")
        if isinstance(steps, list) and steps:
            self.step_list(steps, "$.steps", ())
        self.check_refs()

    def step_list(self, steps: Any, path: str, chain: tuple[Composite, ...]) -> None:
        if not isinstance(steps, list):
            self.problem(path, "invalid_field", "expected a list of steps")
            return
        for index, step in enumerate(steps):
            self.step(step, f"{path}[{index}]", chain)

    def step(self, step: Any, path: str, chain: tuple[Composite, ...]) -> None:
        envelope = docformat.step_envelope(step, path)  # the format's rules for every step
        if envelope.problem is not None or not isinstance(step, Mapping):
            self.problems.extend(p for p in (envelope.problem,) if p is not None)
            return
        self.problems.extend(p for p in (envelope.id_problem, envelope.kind_problem) if p)
        kind = step.get("kind")
        if "kind" in step and not isinstance(kind, str):
            self.problem(f"{path}.kind", "invalid_field", "'kind' must be a string")
            kind = None
        info: _StepInfo | None = None
        step_id = envelope.step_id
        if step_id is not None and step_id in self.steps:
            self.problem(
                f"{path}.id",
                "duplicate_step_id",
                f"step id {step_id!r} is already used at {self.steps[step_id].path}; ids are "
                "unique across the whole definition",
            )
        elif step_id is not None:
            info = _StepInfo(step_id, kind or "", self.order, chain, path)
            self.steps[step_id] = info
        self.order += 1
        if kind not in _KIND_FIELDS:
            self.opaque(step)  # a third-party kind: its fields are the server's to check
            return
        self.unknown_fields(step, _KIND_FIELDS[kind] | {"id", "kind"}, path)
        owner = info or _StepInfo("", kind, self.order - 1, chain, path)
        getattr(self, f"kind_{kind}")(step, path, owner)

    def opaque(self, step: Mapping[str, Any]) -> None:
        """Remember ids of step-shaped objects inside a third-party kind's config."""
        for value in _walk(step):
            if isinstance(value, Mapping) and isinstance(value.get("id"), str):
                if isinstance(value.get("kind"), str) and value is not step:
                    self.opaque_ids.add(value["id"])


    # --- composites ------------------------------------------------------------------

    def kind_branch(self, step: Mapping[str, Any], path: str, owner: _StepInfo) -> None:
        cases = self.required(step, "cases", path)
        if "cases" not in step:
            return
        here = f"{path}.cases"
        if not isinstance(cases, list):
            self.problem(here, "invalid_field", "'cases' must be a list")
            return
        if not cases:
            self.problem(here, "branch_empty", "a branch needs at least one case")
            return
        if len(cases) > self.limits["max_branch_cases"]:
            self.problem(
                here,
                "limit_exceeded",
                f"{len(cases)} cases; the limit max_branch_cases is "
                f"{self.limits['max_branch_cases']}",
            )
        total = False  # once a case always holds, every later case is unreachable
        for index, case in enumerate(cases):
            case_path = f"{here}[{index}]"
            if not isinstance(case, Mapping):
                self.problem(case_path, "invalid_field", "a case is an object")
                continue
            if total:
                self.problem(
                    case_path,
                    "branch_unreachable_case",
                    "this case can never be chosen: an earlier case always holds",
                )
            if "default" in case:
                self.unknown_fields(case, {"default", "steps"}, case_path)
                if case["default"] is not True:
                    self.problem(f"{case_path}.default", "invalid_field", "'default' must be true")
                else:
                    total = True
            else:
                self.unknown_fields(case, {"when", "steps"}, case_path)
                if "when" in case:
                    when = case["when"]
                    self.condition(when, f"{case_path}.when", owner)
                    if when is False and not total:
                        self.problem(
                            f"{case_path}.when",
                            "branch_unreachable_case",
                            "this condition is always false",
                        )
                    total = total or when is True
                else:
                    self.required(case, "when", case_path)
            if "steps" in case:
                block: Composite = (owner.id, "branch", index)
                self.step_list(case["steps"], f"{case_path}.steps", (*owner.chain, block))
            else:
                self.required(case, "steps", case_path)
        if not total:
            self.problem(
                here,
                "branch_not_exhaustive",
                'the cases are not provably exhaustive: add {"default": true, "steps": [...]} '
                "last (the server also accepts cases covering a boolean or enum reference)",
            )

    def kind_parallel(self, step: Mapping[str, Any], path: str, owner: _StepInfo) -> None:
        branches = self.required(step, "branches", path)
        if "branches" not in step:
            return
        here = f"{path}.branches"
        if not isinstance(branches, Mapping):
            self.problem(here, "invalid_field", "'branches' must be an object of step lists")
            return
        if not branches:
            self.problem(here, "parallel_empty", "a parallel step needs at least one branch")
        if len(branches) > self.limits["max_parallel_width"]:
            self.problem(
                here,
                "parallel_too_wide",
                f"{len(branches)} branches exceed the limit of "
                f"{self.limits['max_parallel_width']}",
            )
        for name, steps in branches.items():
            if isinstance(steps, list) and not steps:
                self.problem(
                    key_path(here, name),
                    "parallel_empty",
                    f"branch {name!r} has no steps, so it has no output to join",
                )
            block: Composite = (owner.id, "parallel", name)
            self.step_list(steps, key_path(here, name), (*owner.chain, block))


    # --- references ------------------------------------------------------------------

    def check_refs(self) -> None:
        for use in self.uses:
            target = self.steps.get(use.step_id)
            if target is None:
                if use.step_id not in self.opaque_ids:
                    self.problem(
                        use.path, "ref_unknown_step", f"no step with id '{use.step_id}'"
                    )
                continue
            code, message = _placement(use, target)
            if code is not None:
                self.problem(use.path, code, message)




def validate(definition: Workflow | Mapping[str, Any]) -> list[Problem]:
    """Check a definition's structural rules locally; return every problem found.

    :param definition: a ``Workflow`` or a definition document (parsed with exact numbers,
        e.g. by ``weave_sdk.loads``).
    :return: the problems, in document order (reference problems last); empty when the
        definition passes every local rule. The server may still find more at publish.
    """
    doc = definition.to_json() if isinstance(definition, Workflow) else definition
    validator = _Validator()
    validator.document(doc)
    return validator.problems



__all__ = ["PROBLEM_CODES", "parse_ref", "validate"]
