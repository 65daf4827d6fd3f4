"""What local validation holds a definition to: the codes, the default limits, the kinds.

``weave_sdk.validate`` reports with these; the server's codes and default limits are the
same (``tests/core/test_sdk_agrees.py`` checks both against the engine's).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from weave_sdk import docformat

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
