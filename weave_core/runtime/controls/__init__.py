"""Controls, failure policies, review and recovery (issue 7; DESIGN.md R-8).

Operators pause, resume and cancel instances, conclude on failed steps, resolve reviews
and recover steps; every operation carries a stable operation id, the operator and a
reason, and commits with its transitions and audit. See docs/operators-guide.md.

Modules: ``operations`` (the operation rows and replay), ``controls`` (pause, resume,
cancel), ``review`` (conclusions, resolve), ``recovery`` (re-running a step), ``accept``
(a reviewed result that continues the workflow), ``liveness`` (no operation leaves an
instance unexplained), ``views`` (what the instance view shows), ``errors`` (every refusal
and its code). Stopping an instance, shared by cancel and the FAIL_AFTER_SETTLED policy of
the consumer, is :mod:`weave_core.runtime.stopping`, below both.
"""

from weave_core.runtime.controls._common import OperationOutcome
from weave_core.runtime.controls.accept import AcceptRequest, accept
from weave_core.runtime.controls.controls import ControlRequest, cancel, pause, resume
from weave_core.runtime.controls.operations import Operation, OperationKind, operations_of
from weave_core.runtime.controls.recovery import RecoverRequest, recover
from weave_core.runtime.controls.review import (
    ConcludeRequest,
    Conclusion,
    ResolveOutcome,
    ResolveRequest,
    conclude,
    resolve,
)
from weave_core.runtime.controls.views import control_view

__all__ = [
    "AcceptRequest",
    "ConcludeRequest",
    "Conclusion",
    "ControlRequest",
    "Operation",
    "OperationKind",
    "OperationOutcome",
    "RecoverRequest",
    "ResolveOutcome",
    "ResolveRequest",
    "accept",
    "cancel",
    "conclude",
    "control_view",
    "operations_of",
    "pause",
    "recover",
    "resolve",
    "resume",
]
