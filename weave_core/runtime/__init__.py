"""The runtime kernel (issue 5): admission, the inbox consumer, advances, checkpoints,
deadlines and the tick. See docs/runtime.md.

Imports point one way (lint-imports): entry points (``reads``, ``tick``, ``step``) →
``controls`` → ``admission``, ``checkpoints`` → ``consumer`` → ``stopping`` → ``waits``,
``quarantine`` → ``advance``, which applies a plan's effects → ``activation`` →
``wait_opening`` → ``status``, ``wait_records``, ``programs`` → ``history``,
``snapshot``, ``frozen``, ``pending`` → ``outcomes`` → ``instances``.
"""

from weave_core.runtime.admission import (
    IdempotencyConflictError,
    StartRequest,
    StartResult,
    start_workflow,
)
from weave_core.runtime.checkpoints import PendingResult, run_pending
from weave_core.runtime.consumer import (
    ConsumeResult,
    Outcome,
    consume,
    consume_task_results,
)
from weave_core.runtime.instances import InstanceStatus, InstanceView
from weave_core.runtime.tick import TickLoop, TickReport, run_tick

__all__ = [
    "ConsumeResult",
    "IdempotencyConflictError",
    "InstanceStatus",
    "InstanceView",
    "Outcome",
    "PendingResult",
    "StartRequest",
    "StartResult",
    "TickLoop",
    "TickReport",
    "consume",
    "consume_task_results",
    "run_pending",
    "run_tick",
    "start_workflow",
]
