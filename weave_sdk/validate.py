"""Local validation: the structural rules of a definition that need no server.

``validate(definition)`` reports every problem at once, each with a JSON path (like
``$.steps[1].cases[0].when``), a stable code from ``PROBLEM_CODES`` and a message. The
server validates again at publish time with the same codes, and more: what needs the
installed plugins (third-party kinds' fields) or the database is only checked there.
Kinds other than the six built-in ones pass through unflagged: they may exist server-side.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any, Literal

from weave_sdk import docformat
from weave_sdk.definition import Workflow
from weave_sdk.errors import Problem
from weave_sdk.exactjson import JSON
from weave_sdk.expressions import (
    COMPARISON_OPERATORS,
    OPERATORS,
    ORDERING_OPERATORS,
    PATH_SEGMENT,
    REF_KEY,
    STEP_ID,
)

PROBLEM_CODES: Mapping[str, str] = MappingProxyType(
    {
        "schema_version_unsupported": "``schema_version`` is not 1, the only version defined.",
        "missing_field": "A required field is absent (top level, a step, or a nested object).",
        "unknown_field": "A field a built-in kind (or the top level) does not define.",
        "invalid_field": (
            "A field has the wrong type or value: e.g. ``failure_policy`` not ``REVIEW`` or "
            "``FAIL_AFTER_SETTLED``, a non-positive count or duration, a non-object schema."
        ),
        "invalid_id": (
            "``definition_id``/``version`` not ``[A-Za-z0-9][A-Za-z0-9._-]*`` with at most 128 "
            "characters (or the reserved version ``latest``), or a step id not matching "
            "``[A-Za-z_][A-Za-z0-9_]*`` with at most 64 characters."
        ),
        "input_schema_invalid": "``input_schema`` is not an object (the server also checks it "
        "against JSON Schema Draft 2020-12).",
        "duplicate_step_id": "Two steps share an id; ids are unique across the whole definition.",
        "ref_invalid": (
            "A ``$ref`` is malformed: not ``input[.<path>]`` or "
            "``steps.<step_id>.output[.<path>]``, a bad path segment, or extra keys."
        ),
        "ref_unknown_step": "A ``$ref`` names a step id that is not in the definition.",
        "ref_forward": (
            "A ``$ref`` reads the step itself, a step that encloses it, one of its own "
            "children, or a step that runs later."
        ),
        "ref_cross_branch": (
            "A ``$ref`` reads a step in another branch of the same ``parallel``, or in "
            "another case of the same ``branch``."
        ),
        "ref_not_guaranteed": (
            "A ``$ref`` reads a step inside a ``branch`` case from after the branch (that case "
            "may not have run); allowed only as the operand of ``exists``."
        ),
        "branch_empty": "A ``branch`` has no cases.",
        "branch_not_exhaustive": (
            "A ``branch`` has no ``default`` case and no case that is literally ``true`` (the "
            "server also accepts cases covering every value of a boolean or enum reference)."
        ),
        "branch_unreachable_case": (
            "A ``branch`` case can never be chosen: it follows the ``default`` or a literally "
            "``true`` case, or its condition is literally ``false``."
        ),
        "parallel_empty": "A ``parallel`` has no branches, or a branch has no steps.",
        "parallel_too_wide": "A ``parallel`` has more than 32 branches.",
        "poll_budget_too_large": (
            "A ``poll``'s max_rounds exceeds 1000, or max_rounds times attempts_per_round "
            "exceeds 10000."
        ),
        "limit_exceeded": (
            "A value is above an engine limit (default limits): a duration over 366 days, "
            "more than 100 attempts, more than 32 branch cases."
        ),
        "condition_invalid": (
            "A condition is outside the vocabulary (eq, ne, lt, le, gt, ge, in, exists, and, "
            "or, not, literal true/false) or has the wrong arity or operand types."
        ),
    }
)
"""Every code ``validate()`` reports, with what it means. The server uses the same codes."""

MAX_ID_LENGTH = 128
MAX_PARALLEL_WIDTH = 32
MAX_POLL_ATTEMPTS_TOTAL = 10_000
MAX_POLL_ROUNDS = 1000
MAX_TASK_ATTEMPTS = 100
MAX_BRANCH_CASES = 32
MAX_DEADLINE_SECONDS = 366 * 24 * 3600
DEFAULT_LIMITS: Mapping[str, int] = MappingProxyType(
    {
        "max_steps": 500,
        "max_nesting": 8,
        "max_parallel_width": MAX_PARALLEL_WIDTH,
        "max_branch_cases": MAX_BRANCH_CASES,
        "max_poll_rounds": MAX_POLL_ROUNDS,
        "max_poll_attempts_total": MAX_POLL_ATTEMPTS_TOTAL,
        "max_task_attempts": MAX_TASK_ATTEMPTS,
        "max_value_bytes": 256 * 1024,
        "max_deadline_seconds": MAX_DEADLINE_SECONDS,
        "max_id_length": MAX_ID_LENGTH,
    }
)
"""The engine's default limits (weave_core.limits), which local checks hold definitions to."""
RESERVED_VERSIONS = docformat.RESERVED_VERSIONS
DEFAULT_BACKOFF_SECONDS = 1
DEFAULT_MAX_BACKOFF_SECONDS = 300
MAX_CONDITION_DEPTH = 32
FAILURE_POLICIES = docformat.FAILURE_POLICIES

_KIND_FIELDS: dict[str, set[str]] = {
    "task": {
        "queue", "handler", "input", "output_schema", "retry", "timeouts", "trace_key",
        "resource_key",
    },
    "signal": {"name", "correlation_key", "param_version", "timeout_seconds"},
    "timer": {"seconds"},
    "poll": {
        "queue",
        "handler",
        "input",
        "max_rounds",
        "interval_seconds",
        "deadline_seconds",
        "attempts_per_round",
        "classify",
        "receipt",
    },
    "branch": {"cases"},
    "parallel": {"branches"},
}
_DEADLINE_LIMIT = ("max_deadline_seconds", MAX_DEADLINE_SECONDS)

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


@dataclass
class _Validator:
    problems: list[Problem] = field(default_factory=list)
    steps: dict[str, _StepInfo] = field(default_factory=dict)
    opaque_ids: set[str] = field(default_factory=set)
    uses: list[_RefUse] = field(default_factory=list)
    order: int = 0

    def problem(self, path: str, code: str, message: str) -> None:
        assert code in PROBLEM_CODES, code
        self.problems.append(Problem(path, code, message))

    # --- fields ----------------------------------------------------------------------

    def required(self, obj: Mapping[str, Any], key: str, path: str) -> Any:
        if key not in obj:
            self.problem(key_path(path, key), "missing_field", f"'{key}' is required")
        return obj.get(key)

    def unknown_fields(self, obj: Mapping[str, Any], allowed: set[str], path: str) -> None:
        for key in obj:
            if key not in allowed:
                self.problem(key_path(path, key), "unknown_field", f"unknown field '{key}'")

    def text(self, obj: Mapping[str, Any], key: str, path: str, *, required: bool) -> None:
        if required and key not in obj:
            self.required(obj, key, path)
            return
        if key in obj:
            value = obj[key]
            if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID_LENGTH:
                self.problem(
                    key_path(path, key),
                    "invalid_field",
                    f"'{key}' must be a string of 1-{MAX_ID_LENGTH} characters",
                )

    def count(
        self,
        obj: Mapping[str, Any],
        key: str,
        path: str,
        *,
        required: bool,
        minimum: int = 1,
        limit: tuple[str, int] | None = None,
    ) -> int | None:
        """A whole number >= ``minimum`` (counts and durations in seconds), within ``limit``."""
        if required and key not in obj:
            self.required(obj, key, path)
            return None
        if key not in obj:
            return None
        value = _as_int(obj[key])
        if value is None or value < minimum:
            self.problem(
                key_path(path, key), "invalid_field", f"'{key}' must be an integer >= {minimum}"
            )
            return None
        if limit is not None and value > limit[1]:
            self.problem(
                key_path(path, key),
                "limit_exceeded",
                f"{key} is {value}; the limit {limit[0]} is {limit[1]}",
            )
        return value

    def number(self, obj: Mapping[str, Any], key: str, path: str, minimum: int) -> None:
        if key not in obj:
            return
        value = obj[key]
        if not _is_number(value) or value < minimum:
            self.problem(
                key_path(path, key), "invalid_field", f"'{key}' must be a number >= {minimum}"
            )

    def obj(self, value: Any, path: str, what: str) -> Mapping[str, Any] | None:
        if not isinstance(value, Mapping):
            self.problem(path, "invalid_field", f"{what} must be an object")
            return None
        return value

    # --- document --------------------------------------------------------------------

    def document(self, doc: Any) -> None:
        canonical, stop, _ = docformat.gate(doc)
        if canonical is None:  # nothing else is checked (another version may mean otherwise)
            assert stop is not None
            self.problems.append(stop)
            return
        found, _ = docformat.top_level_problems(canonical, DEFAULT_LIMITS)
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
        if not isinstance(step, Mapping):
            self.problem(path, "invalid_field", "a step is a JSON object")
            return
        step_id = self.required(step, "id", path)
        kind = self.required(step, "kind", path)
        if "kind" in step and not isinstance(kind, str):
            self.problem(f"{path}.kind", "invalid_field", "'kind' must be a string")
            kind = None
        info: _StepInfo | None = None
        if "id" in step:
            if not isinstance(step_id, str) or not STEP_ID.match(step_id):
                self.problem(
                    f"{path}.id",
                    "invalid_id",
                    "a step id matches [A-Za-z_][A-Za-z0-9_]* and has at most 64 characters",
                )
            elif step_id in self.steps:
                self.problem(
                    f"{path}.id",
                    "duplicate_step_id",
                    f"step id '{step_id}' is already used at {self.steps[step_id].path}",
                )
            else:
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

    # --- kinds -----------------------------------------------------------------------

    def handler(self, step: Mapping[str, Any], path: str) -> None:
        value = self.required(step, "handler", path)
        if "handler" not in step:
            return
        here = f"{path}.handler"
        handler = self.obj(value, here, "'handler'")
        if handler is None:
            return
        self.unknown_fields(handler, {"name", "version", "idempotent"}, here)
        self.text(handler, "name", here, required=True)
        self.text(handler, "version", here, required=True)
        if "idempotent" in handler and not isinstance(handler["idempotent"], bool):
            self.problem(f"{here}.idempotent", "invalid_field", "'idempotent' must be a boolean")

    def template(self, value: JSON, path: str, owner: _StepInfo, need: Need = "value") -> None:
        for here, ref_obj in _template_refs(value, path):
            self.ref(ref_obj, here, owner, need)

    def ref(self, ref_obj: Mapping[str, Any], path: str, owner: _StepInfo, need: Need) -> None:
        if len(ref_obj) != 1:
            self.problem(path, "ref_invalid", "an object with '$ref' must have no other keys")
            return
        error, step_id = parse_ref(ref_obj[REF_KEY])
        if error is not None:
            self.problem(path, "ref_invalid", error)
        elif step_id is not None:
            self.uses.append(_RefUse(path, step_id, owner, need))

    def kind_task(self, step: Mapping[str, Any], path: str, owner: _StepInfo) -> None:
        self.text(step, "queue", path, required=True)
        self.handler(step, path)
        if "input" in step:
            self.template(step["input"], f"{path}.input", owner)
        if "output_schema" in step:
            self.obj(step["output_schema"], f"{path}.output_schema", "'output_schema'")
        if "retry" in step:
            here = f"{path}.retry"
            retry = self.obj(step["retry"], here, "'retry'")
            if retry is not None:
                names = {"max_attempts", "backoff_seconds", "backoff_multiplier"}
                self.unknown_fields(retry, names | {"max_backoff_seconds"}, here)
                attempts = ("max_task_attempts", MAX_TASK_ATTEMPTS)
                self.count(retry, "max_attempts", here, required=False, limit=attempts)
                self.number(retry, "backoff_seconds", here, 0)
                self.number(retry, "backoff_multiplier", here, 1)
                self.number(retry, "max_backoff_seconds", here, 0)
                backoff = retry.get("backoff_seconds", DEFAULT_BACKOFF_SECONDS)
                cap = retry.get("max_backoff_seconds", DEFAULT_MAX_BACKOFF_SECONDS)
                if _is_number(backoff) and _is_number(cap) and cap < backoff:
                    self.problem(
                        f"{here}.max_backoff_seconds",
                        "invalid_field",
                        "max_backoff_seconds must not be below backoff_seconds",
                    )
        if "timeouts" in step:
            here = f"{path}.timeouts"
            timeouts = self.obj(step["timeouts"], here, "'timeouts'")
            if timeouts is not None:
                names = {"schedule_to_start", "start_to_close", "heartbeat"}
                self.unknown_fields(timeouts, names, here)
                for name in sorted(names):
                    self.count(timeouts, name, here, required=False, limit=_DEADLINE_LIMIT)

    def signal_fields(self, obj: Mapping[str, Any], path: str, owner: _StepInfo) -> None:
        self.text(obj, "name", path, required=True)
        if "correlation_key" in obj:
            key = obj["correlation_key"]
            here = f"{path}.correlation_key"
            if isinstance(key, Mapping) and REF_KEY in key:
                self.template(key, here, owner)
            elif not isinstance(key, str) or not key:
                self.problem(
                    here,
                    "invalid_field",
                    "correlation_key must be a non-empty string or a {'$ref': ...}",
                )
        else:
            self.required(obj, "correlation_key", path)
        self.text(obj, "param_version", path, required=False)

    def kind_signal(self, step: Mapping[str, Any], path: str, owner: _StepInfo) -> None:
        self.signal_fields(step, path, owner)
        self.count(step, "timeout_seconds", path, required=False, limit=_DEADLINE_LIMIT)

    def kind_timer(self, step: Mapping[str, Any], path: str, owner: _StepInfo) -> None:
        self.count(step, "seconds", path, required=True, limit=_DEADLINE_LIMIT)

    def kind_poll(self, step: Mapping[str, Any], path: str, owner: _StepInfo) -> None:
        self.text(step, "queue", path, required=True)
        self.handler(step, path)
        if "input" in step:
            self.template(step["input"], f"{path}.input", owner)
        rounds = self.count(step, "max_rounds", path, required=True)
        interval = self.count(step, "interval_seconds", path, required=True)
        deadline = self.count(step, "deadline_seconds", path, required=True, limit=_DEADLINE_LIMIT)
        attempts = self.count(
            step,
            "attempts_per_round",
            path,
            required=False,
            limit=("max_task_attempts", MAX_TASK_ATTEMPTS),
        )
        if rounds is not None and rounds > MAX_POLL_ROUNDS:
            self.problem(
                f"{path}.max_rounds",
                "poll_budget_too_large",
                f"max_rounds is {rounds}; the limit max_poll_rounds is {MAX_POLL_ROUNDS}",
            )
        if rounds is not None and rounds * (attempts or 1) > MAX_POLL_ATTEMPTS_TOTAL:
            self.problem(
                path,
                "poll_budget_too_large",
                f"max_rounds x attempts_per_round is {rounds * (attempts or 1)}; the limit "
                f"max_poll_attempts_total is {MAX_POLL_ATTEMPTS_TOTAL}",
            )
        if interval is not None and deadline is not None and interval > deadline:
            self.problem(
                f"{path}.interval_seconds",
                "invalid_field",
                "interval_seconds is longer than deadline_seconds: no second round could run",
            )
        if "classify" in step:
            self.classify(step["classify"], f"{path}.classify")
        else:
            self.required(step, "classify", path)
        if "receipt" in step:
            here = f"{path}.receipt"
            receipt = self.obj(step["receipt"], here, "'receipt'")
            if receipt is not None:
                self.unknown_fields(receipt, {"name", "correlation_key", "param_version"}, here)
                self.signal_fields(receipt, here, owner)

    def classify(self, value: Any, path: str) -> None:
        classify = self.obj(value, path, "'classify'")
        if classify is None:
            return
        names = ("pending", "succeeded", "failed", "needs_review")
        self.unknown_fields(classify, {"field", *names}, path)
        self.text(classify, "field", path, required=True)
        seen: dict[tuple[type, Any], str] = {}
        for name in names:  # only 'succeeded' is required (the engine's poll kind)
            values = self.required(classify, name, path) if name == "succeeded" else None
            if name not in classify:
                continue
            values = classify[name]
            if not isinstance(values, list):
                self.problem(f"{path}.{name}", "invalid_field", f"'{name}' must be a list")
                continue
            bad = [i for i, v in enumerate(values) if not _is_status(v)]
            for index in bad:
                self.problem(
                    f"{path}.{name}[{index}]",
                    "invalid_field",
                    "a classify value is a string or an integer",
                )
            if bad:
                continue
            if name == "succeeded" and not values:
                self.problem(f"{path}.{name}", "invalid_field", "'succeeded' must not be empty")
            for index, item in enumerate(values):
                key = (type(item), item)
                if key in seen and seen[key] != name:
                    self.problem(
                        f"{path}.{name}[{index}]",
                        "invalid_field",
                        f"{item!r} is already classified as {seen[key]}",
                    )
                seen.setdefault(key, name)

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
        if len(cases) > MAX_BRANCH_CASES:
            self.problem(
                here,
                "limit_exceeded",
                f"{len(cases)} cases; the limit max_branch_cases is {MAX_BRANCH_CASES}",
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
        if len(branches) > MAX_PARALLEL_WIDTH:
            self.problem(
                here,
                "parallel_too_wide",
                f"{len(branches)} branches exceed the limit of {MAX_PARALLEL_WIDTH}",
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

    # --- conditions ------------------------------------------------------------------

    def condition(self, cond: JSON, path: str, owner: _StepInfo, depth: int = 0) -> None:
        def bad(where: str, message: str) -> None:
            self.problem(where, "condition_invalid", message)

        if depth > MAX_CONDITION_DEPTH:
            bad(path, f"conditions nest deeper than {MAX_CONDITION_DEPTH} levels")
            return
        if isinstance(cond, bool):
            return
        if not isinstance(cond, Mapping) or len(cond) != 1:
            bad(path, f"a condition is an object with exactly one operator of {list(OPERATORS)}")
            return
        ((op, arg),) = cond.items()
        here = key_path(path, op)
        if op in COMPARISON_OPERATORS:
            if not isinstance(arg, list) or len(arg) != 2:
                bad(here, f"'{op}' takes a list of two operands")
                return
            for index, operand in enumerate(arg):
                where = f"{here}[{index}]"
                is_ref = isinstance(operand, Mapping) and REF_KEY in operand
                if op in ORDERING_OPERATORS and not (
                    is_ref or _is_number(operand) or isinstance(operand, str)
                ):
                    bad(where, f"'{op}' compares numbers or strings only")
                    continue
                self.template(operand, where, owner)
        elif op == "in":
            if not isinstance(arg, list) or len(arg) != 2 or not isinstance(arg[1], list):
                bad(here, "'in' takes [operand, [value, ...]]")
                return
            self.template(arg[0], f"{here}[0]", owner)
            for index, item in enumerate(arg[1]):
                if isinstance(item, Mapping) and REF_KEY in item:
                    bad(f"{here}[1][{index}]", "the values of 'in' are literals")
        elif op == "exists":
            if not (isinstance(arg, Mapping) and REF_KEY in arg and len(arg) == 1):
                bad(here, "'exists' takes one reference")
                return
            self.ref(arg, here, owner, "exists")
        elif op in ("and", "or"):
            if not isinstance(arg, list) or not arg:
                bad(here, f"'{op}' takes a non-empty list of conditions")
                return
            for index, item in enumerate(arg):
                self.condition(item, f"{here}[{index}]", owner, depth + 1)
        elif op == "not":
            self.condition(arg, here, owner, depth + 1)
        else:
            bad(path, f"unknown operator {op!r}; conditions use {list(OPERATORS)}")

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


# --- helpers -------------------------------------------------------------------------


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
