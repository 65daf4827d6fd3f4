"""Task dispatch (the seeds' "Pulse"): queues, tasks, attempts, leases, retries, quotas,
execution gates, and result delivery to the inbox.

Modules: ``model`` (vocabulary), ``queues`` (capacity and quota), ``tasks`` (create,
cancel, read), ``claim``, ``reports`` (heartbeat, complete), ``leases`` (expiry sweep),
``gates``, ``delivery`` (settle + inbox), ``wakeup`` (in-process wake-ups).
Functions that take a ``Connection`` run in the caller's transaction and end in ``_txn``.
"""

from weave_core.dispatch.claim import HandlerRef, claim, claim_wait
from weave_core.dispatch.delivery import settle_txn, verify_owner_txn
from weave_core.dispatch.errors import (
    AttemptNotFoundError,
    AttemptSupersededError,
    GateNotFoundError,
    LeaseExpiredError,
    QueueFullError,
    QuotaExceededError,
    ReportConflictError,
    TaskNotCancellableError,
    TaskNotFoundError,
    TaskOwnerUnverifiedError,
)
from weave_core.dispatch.gates import GateState, create_gate_txn, get_gate, set_gate_txn
from weave_core.dispatch.leases import SweepReport, sweep_expired_leases
from weave_core.dispatch.model import (
    ClaimedTask,
    OwnerKind,
    ReportOutcome,
    TaskError,
    TaskSpec,
    TaskStatus,
    TaskView,
)
from weave_core.dispatch.queues import (
    get_queue,
    get_quota,
    list_queues,
    lock_capacity_txn,
    set_namespace_quota,
    set_queue_capacity,
)
from weave_core.dispatch.reports import Completion, Heartbeat, Report, complete, heartbeat
from weave_core.dispatch.tasks import (
    cancel_task,
    cancel_task_txn,
    create_task,
    create_task_txn,
    get_task,
    get_task_txn,
)

__all__ = [
    "AttemptNotFoundError",
    "AttemptSupersededError",
    "ClaimedTask",
    "Completion",
    "GateNotFoundError",
    "GateState",
    "HandlerRef",
    "Heartbeat",
    "LeaseExpiredError",
    "OwnerKind",
    "QueueFullError",
    "QuotaExceededError",
    "Report",
    "ReportConflictError",
    "ReportOutcome",
    "SweepReport",
    "TaskError",
    "TaskNotCancellableError",
    "TaskNotFoundError",
    "TaskOwnerUnverifiedError",
    "TaskSpec",
    "TaskStatus",
    "TaskView",
    "cancel_task",
    "cancel_task_txn",
    "claim",
    "claim_wait",
    "complete",
    "create_gate_txn",
    "create_task",
    "create_task_txn",
    "get_gate",
    "get_queue",
    "get_quota",
    "get_task",
    "get_task_txn",
    "heartbeat",
    "list_queues",
    "lock_capacity_txn",
    "set_gate_txn",
    "set_namespace_quota",
    "set_queue_capacity",
    "settle_txn",
    "sweep_expired_leases",
    "verify_owner_txn",
]
