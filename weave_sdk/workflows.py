"""Workflow instances as the SDK sees them: typed answers, handles and outcome errors.

``client.start(...)`` returns a :class:`WorkflowHandle` (``AsyncClient.start`` an
:class:`AsyncWorkflowHandle`) bound to one ``workflow_id``: ``describe()`` reads the
instance with its steps, activations, tasks and pending work; ``history()`` reads every
transition in revision order; ``result(timeout=...)`` polls ``describe()`` with a growing
interval until the instance settles and returns its output, or raises a
:class:`WorkflowError` subclass carrying the last view it read.

The models mirror the server's JSON (``GET /v1/namespaces/{ns}/workflows/{id}`` and
friends) field by field. Inputs, outputs and results are kept as parsed by
``weave_sdk.loads``: integers are ``int``, other numbers ``Decimal``, never ``float``.
Unknown members are ignored, so a newer server may add fields.
"""

from __future__ import annotations

from weave_sdk._handles import (
    DEFAULT_POLL_INITIAL,
    DEFAULT_POLL_MAX,
    AsyncWorkflowHandle,
    WorkflowHandle,
)
from weave_sdk._workflow_models import (
    ActivationInfo,
    AuditInfo,
    HistoryEvent,
    HistoryPage,
    PendingAdvance,
    StepInfo,
    TaskInfo,
    WorkflowDescription,
    WorkflowExecution,
    WorkflowPage,
)
from weave_sdk._workflow_models import _Model as _Model
from weave_sdk.outcomes import (
    WorkflowCancelledError,
    WorkflowError,
    WorkflowFailedError,
    WorkflowNeedsReviewError,
    WorkflowTimeoutError,
)
from weave_sdk.views import OperationInfo, PollRoundInfo, SignalInfo, WaitInfo, WorkflowStatus

__all__ = [
    "DEFAULT_POLL_INITIAL",
    "DEFAULT_POLL_MAX",
    "ActivationInfo",
    "AsyncWorkflowHandle",
    "AuditInfo",
    "HistoryEvent",
    "HistoryPage",
    "OperationInfo",
    "PendingAdvance",
    "PollRoundInfo",
    "SignalInfo",
    "StepInfo",
    "TaskInfo",
    "WaitInfo",
    "WorkflowCancelledError",
    "WorkflowDescription",
    "WorkflowError",
    "WorkflowExecution",
    "WorkflowFailedError",
    "WorkflowHandle",
    "WorkflowNeedsReviewError",
    "WorkflowPage",
    "WorkflowStatus",
    "WorkflowTimeoutError",
]
