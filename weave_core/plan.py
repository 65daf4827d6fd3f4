"""Re-exports :mod:`weave_core.planning.plan` at its stable public path.

Plugin authors return plans built from it. Kept when the kernel was grouped into folders
(#16); code inside the kernel imports :mod:`weave_core.planning.plan` itself.
"""

from weave_core.planning.plan import (
    MAX_PLAN_LIMIT,
    Decision,
    DecisionKind,
    Plan,
    PlanRejectedError,
    RejectReason,
    command_to_json,
)

__all__ = [
    "MAX_PLAN_LIMIT",
    "Decision",
    "DecisionKind",
    "Plan",
    "PlanRejectedError",
    "RejectReason",
    "command_to_json",
]
