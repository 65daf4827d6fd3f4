"""Signals (R-7.1 to R-7.3): accepted, stored, matched and limited; a due ``SIGNAL`` row.

Acceptance (:func:`accept_signal`, one transaction): identity (shared) → instance lock →
the idempotency check on ``(namespace, signal_id)`` → limits → the signal row → when an
OPEN wait of the instance matches (name, frozen correlation key, parameter version), the
signal is *bound* to that activation and the instance's ``SIGNAL`` pending row for it is
made due now → transition ``signal.accepted`` + audit. Acceptance means durably saved;
consumption is a later transaction (the fast path right after the commit, or the tick).

Matching rules:
- a wait consumes exactly one signal: the oldest ACCEPTED one with its name, key and
  version that is bound to it or to no wait (an *early* signal, accepted while no matching
  wait was open);
- a signal bound to an activation is never consumed by another one: if its wait ended
  otherwise (timeout, cancel, another signal) it is marked ``LOST`` with a classification;
- **boundary rule**: a signal is on time when ``accepted_at <= deadline_at`` (database
  time, inclusive), however late it is consumed.

Limits: ``max_unmatched_signals`` ACCEPTED signals per instance (429
``signal_backlog_full``), the payload at most ``max_value_bytes`` (413
``signal_payload_too_large``), ``signal_retention_seconds`` before an unconsumed signal
expires (:mod:`~weave_core.runtime.waits.signal_expiry`: state ``EXPIRED``, a transition
and an audit row each; a signal bound to an OPEN wait is still valid and is never expired).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import IntegrityError

from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.errors import (
    ConflictError,
    LimitExceededError,
    NotFoundError,
    PayloadTooLargeError,
    Problem,
    ValidationError,
)
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.faults import fault_point
from weave_core.planning.program import Program
from weave_core.runtime.frozen import instance_limits
from weave_core.runtime.history import History
from weave_core.runtime.instances import TERMINAL, InstanceStatus, iso, load_json, new_operation_id
from weave_core.runtime.pending import PendingKind, schedule_txn
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.wait_cancel import lose_bound_txn
from weave_core.runtime.wait_records import (
    SIGNAL_REASON,
    LoserClass,
    SignalState,
    WaitState,
    is_current,
)
from weave_core.runtime.waits.declared import require_declared_txn
from weave_core.runtime.waits.locking import (
    lock_matching_signal,
    lock_wait,
)
from weave_core.runtime.waits.signal_waits import consume_signal_txn
from weave_core.runtime.waits.timers import timeout_txn
from weave_core.storage.locks import lock_activation, lock_instance, lock_namespace_shared
from weave_core.storage.schema import weave_instances, weave_signals, weave_waits

MAX_EVIDENCE_ITEMS: Final = 32
MAX_CORRELATION_KEY: Final = 256
_SIGNAL_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}")


class SignalConflictError(ConflictError):
    """The signal id was accepted before with different content."""

    code = "signal_conflict"


class WorkflowSettledError(ConflictError):
    """The instance already settled: no wait of it can ever consume a signal."""

    code = "workflow_settled"


class SignalBacklogFullError(LimitExceededError):
    """The instance holds ``max_unmatched_signals`` accepted, unconsumed signals."""

    code = "signal_backlog_full"


class SignalPayloadTooLargeError(PayloadTooLargeError):
    """The payload is larger than ``max_value_bytes``."""

    code = "signal_payload_too_large"


@dataclass(frozen=True)
class SignalRequest:
    signal_id: str
    name: str
    correlation_key: str
    payload: JSON = None
    param_version: str = "1"
    evidence: tuple[JSON, ...] = field(default=())

    def content_hash(self, instance_id: str) -> str:
        return exactjson.content_hash({
            "workflow_id": instance_id, "name": self.name,
            "correlation_key": self.correlation_key, "param_version": self.param_version,
            "payload": self.payload, "evidence": list(self.evidence),
        })


@dataclass(frozen=True)
class SignalView:
    """One signal as stored: accepted and consumed are reported separately."""

    signal_id: str
    workflow_id: str
    name: str
    correlation_key: str
    param_version: str
    payload: JSON
    evidence: JSON
    state: str
    accepted_by: str
    accepted_at: datetime
    expires_at: datetime
    target_activation_id: str | None
    consumed_by_activation_id: str | None
    settled_at: datetime | None
    reason: str | None

    @classmethod
    def from_row(cls, row: Any) -> SignalView:
        return cls(row.signal_id, row.instance_id, row.name, row.correlation_key,
                   row.param_version, load_json(row.payload), load_json(row.evidence),
                   row.state, row.accepted_by, row.accepted_at, row.expires_at,
                   row.target_activation_id, row.consumed_by_activation_id, row.settled_at,
                   row.reason)

    def to_json(self) -> dict[str, JSON]:
        return {
            "signal_id": self.signal_id, "workflow_id": self.workflow_id, "name": self.name,
            "correlation_key": self.correlation_key, "param_version": self.param_version,
            "payload": self.payload, "evidence": self.evidence, "state": self.state,
            "accepted_by": self.accepted_by, "accepted_at": iso(self.accepted_at),
            "expires_at": iso(self.expires_at),
            "target_activation_id": self.target_activation_id,
            "consumed_by_activation_id": self.consumed_by_activation_id,
            "settled_at": iso(self.settled_at), "reason": self.reason,
        }


@dataclass(frozen=True)
class Acceptance:
    created: bool
    """True: newly accepted (202); False: the original acceptance of this id (200)."""
    signal: SignalView
    pending_id: int | None = None
    """The SIGNAL pending row made due (a matching wait was open), for the fast path."""


# --- acceptance ----------------------------------------------------------------------


def _check(request: SignalRequest, engine: Engine) -> None:
    problems: list[Problem] = []
    if not isinstance(request.signal_id, str) or not _SIGNAL_ID_RE.fullmatch(request.signal_id):
        problems.append(Problem("$.signal_id", "invalid_field",
                                "1-128 of A-Z a-z 0-9 _ . : - starting with a letter or digit"))
    for name, value, most in (("name", request.name, 128),
                              ("correlation_key", request.correlation_key, MAX_CORRELATION_KEY),
                              ("param_version", request.param_version, 128)):
        if not isinstance(value, str) or not 1 <= len(value) <= most:
            problems.append(Problem(f"$.{name}", "invalid_field",
                                    f"a non-empty string of at most {most} characters"))
    if len(request.evidence) > MAX_EVIDENCE_ITEMS:
        problems.append(Problem("$.evidence", "invalid_field",
                                f"at most {MAX_EVIDENCE_ITEMS} evidence references"))
    if problems:
        raise ValidationError("invalid signal", problems)
    size = len(exactjson.dumps(request.payload).encode("utf-8"))
    limit = engine.limits.max_value_bytes
    if size > limit:
        raise SignalPayloadTooLargeError(
            f"signal payload of {size} bytes exceeds max_value_bytes ({limit})",
            details={"limit_bytes": limit, "size_bytes": size})


def _existing(conn: Connection, namespace: str, signal_id: str) -> Row[Any] | None:
    s = weave_signals
    return conn.execute(
        sa.select(s).where(s.c.namespace == namespace, s.c.signal_id == signal_id)
    ).one_or_none()


def _replay(row: Row[Any], request: SignalRequest, instance_id: str) -> Acceptance:
    if row.content_hash != request.content_hash(instance_id):
        raise SignalConflictError(
            f"signal {request.signal_id!r} was accepted before with different content",
            details={"signal_id": request.signal_id, "workflow_id": row.instance_id})
    return Acceptance(False, SignalView.from_row(row))


def open_match(conn: Connection, instance_id: str, name: str, correlation_key: str,
               param_version: str) -> Any:
    """The OPEN wait of the instance that a signal with these fields matches (a plain read
    under the instance lock: waits open and close only under it)."""
    w = weave_waits
    return conn.execute(
        sa.select(w.c.activation_id, w.c.step_id, w.c.kind)
        .where(w.c.instance_id == instance_id, w.c.state == WaitState.OPEN.value,
               w.c.signal_name == name, w.c.correlation_key == correlation_key,
               w.c.param_version == param_version)
        .order_by(w.c.opened_at, w.c.activation_id)
        .limit(1)
    ).one_or_none()


def unmatched_count(conn: Connection, instance_id: str) -> int:
    s = weave_signals
    return int(conn.execute(
        sa.select(sa.func.count()).select_from(s)
        .where(s.c.instance_id == instance_id, s.c.state == SignalState.ACCEPTED)
    ).scalar_one())


def accept_signal(engine: Engine, namespace: str, instance_id: str, request: SignalRequest,
                  *, actor: str) -> Acceptance:
    """Accept (durably save) one signal, or return its original acceptance; see the module
    docstring. ``NotFoundError`` for an instance that does not exist here (nothing stored)."""
    _check(request, engine)
    db = engine.db

    def _accept(conn: Connection) -> Acceptance:
        if lock_namespace_shared(conn, namespace) is None:
            raise NotFoundError(f"namespace {namespace!r} not found",
                                details={"namespace": namespace})
        found = _existing(conn, namespace, request.signal_id)
        if found is not None:
            return _replay(found, request, instance_id)
        inst = lock_instance(conn, instance_id)
        if inst is None or inst.namespace != namespace:
            raise NotFoundError(f"workflow {instance_id!r} not found",
                                details={"workflow_id": instance_id})
        if InstanceStatus(inst.status) in TERMINAL:
            raise WorkflowSettledError(
                f"workflow {instance_id!r} is {inst.status}: no wait can consume a signal",
                details={"workflow_id": instance_id, "status": inst.status})
        require_declared_txn(conn, engine, inst, request.name, request.param_version)
        limits = instance_limits(conn, engine.limits, inst.config_hash)  # frozen at start
        limit = limits.max_unmatched_signals
        if unmatched_count(conn, instance_id) >= limit:
            raise SignalBacklogFullError(
                f"workflow {instance_id!r} already holds {limit} unconsumed signals "
                "(max_unmatched_signals)",
                details={"workflow_id": instance_id, "limit": limit})
        now = db.now(conn)
        wait = open_match(conn, instance_id, request.name, request.correlation_key,
                          request.param_version)
        target = None if wait is None else wait.activation_id
        conn.execute(sa.insert(weave_signals), dict(
            namespace=namespace, signal_id=request.signal_id, instance_id=instance_id,
            name=request.name, correlation_key=request.correlation_key,
            param_version=request.param_version, payload=exactjson.dumps(request.payload),
            evidence=exactjson.dumps(list(request.evidence)),
            content_hash=request.content_hash(instance_id), accepted_by=actor,
            accepted_at=now,
            expires_at=now + timedelta(seconds=limits.signal_retention_seconds),
            state=SignalState.ACCEPTED, version=1, target_activation_id=target,
            consumed_by_activation_id=None, settled_at=None, reason=None,
        ))
        fault_point("signal.accept.mid")  # the signal row sent, its delivery not yet
        pending_id = None
        if wait is not None:
            pending_id = schedule_txn(
                conn, namespace=namespace, instance_id=instance_id, kind=PendingKind.SIGNAL,
                ref=wait.activation_id, due_at=now, reason=SIGNAL_REASON,
                root_version=int(inst.root_version),
                root_identity=f"{inst.definition_id}@{inst.version}", now=now)
        history = History(namespace, instance_id, int(inst.revision), new_operation_id(), now)
        history.record("signal.accepted", step_id=None if wait is None else wait.step_id,
                       activation_id=target, to_state=SignalState.ACCEPTED,
                       details={"signal_id": request.signal_id, "name": request.name,
                                "correlation_key": request.correlation_key,
                                "param_version": request.param_version,
                                "matched": target is not None})
        history.write(conn, actor=actor, action="workflow.signal.accepted", metadata={
            "signal_id": request.signal_id, "name": request.name,
            "target_activation_id": target})
        i = weave_instances
        conn.execute(sa.update(i).where(i.c.instance_id == instance_id)
                     .values(revision=history.revision, updated_at=now))
        view = SignalView(
            request.signal_id, instance_id, request.name, request.correlation_key,
            request.param_version, exactjson.canonicalize(request.payload),
            exactjson.canonicalize(list(request.evidence)), SignalState.ACCEPTED, actor, now,
            now + timedelta(seconds=limits.signal_retention_seconds), target, None,
            None, None)
        return Acceptance(True, view, pending_id)

    try:
        return db.transaction(_accept, name="accept_signal")
    except IntegrityError:
        # The same signal id committed between our check and our insert: replay it.
        return db.transaction(_accept, name="accept_signal")


# --- consumption (inside the pending-advance transaction) -----------------------------


def signal_due_txn(conn: Connection, engine: Engine, li: LockedInstance, history: History,
                   program: Program, activation_id: str, now: datetime) -> None:
    """A ``SIGNAL`` pending row is due: let the wait consume its signal, or record losers."""
    act = lock_activation(conn, activation_id)
    wait = lock_wait(conn, activation_id)
    if wait is None or wait.signal_name is None:
        return
    if wait.state != WaitState.OPEN.value:
        lose_bound_txn(conn, history, wait, LoserClass.WAIT_ALREADY_SETTLED, now)
        return
    if not is_current(li, act, wait):
        lose_bound_txn(conn, history, wait, LoserClass.STALE_ACTIVATION, now)
        return
    assert act is not None
    sig = lock_matching_signal(conn, instance_id=wait.instance_id, name=wait.signal_name,
                               correlation_key=wait.correlation_key,
                               param_version=wait.param_version, activation_id=activation_id)
    if sig is None:
        return
    if wait.deadline_at is not None and sig.accepted_at > wait.deadline_at:
        # Accepted after the deadline: the timeout wins now, whatever the order of rows.
        on_time = lock_matching_signal(
            conn, instance_id=wait.instance_id, name=wait.signal_name,
            correlation_key=wait.correlation_key, param_version=wait.param_version,
            activation_id=activation_id, accepted_by=wait.deadline_at)
        if on_time is not None:
            consume_signal_txn(conn, engine, li, history, program, act, wait, on_time, now)
            return
        timeout_txn(conn, engine, li, history, program, act, wait, now)
        return
    consume_signal_txn(conn, engine, li, history, program, act, wait, sig, now)


# --- reads ----------------------------------------------------------------------------


def list_signals(conn: Connection, namespace: str, instance_id: str) -> list[dict[str, JSON]]:
    s = weave_signals
    rows = conn.execute(
        sa.select(s).where(s.c.namespace == namespace, s.c.instance_id == instance_id)
        .order_by(s.c.accepted_at, s.c.id)
    ).all()
    return [SignalView.from_row(r).to_json() for r in rows]


__all__ = [
    "Acceptance",
    "SignalBacklogFullError",
    "SignalConflictError",
    "SignalPayloadTooLargeError",
    "SignalRequest",
    "SignalState",
    "SignalView",
    "WorkflowSettledError",
    "accept_signal",
    "list_signals",
    "signal_due_txn",
]
