"""Admission: start an instance in one transaction (R-3.1 to R-3.3).

Idempotency record → instance (+ execution gate) → first activations and their tasks (the
decision core's first plan, successors in a savepoint) → deadline record → audit, all
committed together, with the effective configuration (limits and resolved defaults,
``runtime.frozen``) the instance runs under from then on. ``latest`` is resolved once, at
first acceptance, and pinned; the same (namespace, operation type, key) with the same
request returns the original instance even after a newer version was published (R-3.2).
"""

from __future__ import annotations

import logging
import re
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from weave_core.definitions.store import (
    LATEST,
    DefinitionHead,
    definition_head_txn,
    get_definition,
)
from weave_core.dispatch.gates import create_gate_txn
from weave_core.dispatch.handoff import parked_claimer
from weave_core.dispatch.ledger import (
    Budget,
    CapacityLedger,
    CapacityLocksNeeded,
    budget_of,
    capacity_ledger,
)
from weave_core.dispatch.queues import lock_capacity_txn
from weave_core.dispatch.releases import QUOTA, remember, sums_params, sums_read
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.aftercommit import later
from weave_core.foundation.errors import ConflictError, NotFoundError, Problem, ValidationError
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.exactschema import ExactValidator
from weave_core.observability.metrics import CAPACITY_RERUNS, child
from weave_core.planning.program import Program
from weave_core.runtime import start_heads
from weave_core.runtime.advance import advance_txn
from weave_core.runtime.frozen import freeze, store_txn
from weave_core.runtime.history import History
from weave_core.runtime.instances import (
    FailurePolicy,
    InstanceStatus,
    InstanceView,
    new_instance_id,
    new_operation_id,
)
from weave_core.runtime.pending import (
    DEADLINE_REF,
    PendingKind,
    PendingReason,
    schedule_new_txn,
)
from weave_core.runtime.programs import programs
from weave_core.runtime.snapshot import LockedInstance
from weave_core.runtime.task_routes import remember_routes
from weave_core.runtime.waits.declared import start_problems
from weave_core.storage.deferred import DeferredWriteMismatch, deferring, deferring_now
from weave_core.storage.locks import lock_admission_at_once, lock_namespace_shared
from weave_core.storage.schema import weave_idempotency, weave_instances
from weave_core.storage.statements import insert_rows, read_with_queue

logger = logging.getLogger(__name__)

DEFAULT_OPERATION_TYPE: Final = "start"
_OPERATION_TYPE_RE: Final = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
MAX_IDEMPOTENCY_KEY: Final = 255


class IdempotencyConflictError(ConflictError):
    """The idempotency key was used before with a different request."""

    code = "idempotency_conflict"


@dataclass(frozen=True)
class StartRequest:
    definition_id: str
    version: str
    input: JSON
    idempotency_key: str
    operation_type: str = DEFAULT_OPERATION_TYPE

    def request_hash(self) -> str:
        # The version as asked ("latest" stays "latest"): a later publish changes nothing.
        return exactjson.content_hash(
            {"definition_id": self.definition_id, "version": self.version, "input": self.input}
        )


@dataclass(frozen=True)
class StartResult:
    created: bool
    """True: a new instance (201); False: the original of this idempotency key (200)."""
    instance: InstanceView


def _check(request: StartRequest) -> None:
    problems: list[Problem] = []
    key = request.idempotency_key
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY:
        problems.append(Problem("$.idempotency_key", "invalid_field",
                                f"1 to {MAX_IDEMPOTENCY_KEY} characters"))
    if not isinstance(request.operation_type, str) or not _OPERATION_TYPE_RE.fullmatch(
        request.operation_type
    ):
        problems.append(Problem("$.operation_type", "invalid_field",
                                "1-64 of a-z 0-9 . _ - starting with a letter or digit"))
    if problems:
        raise ValidationError("invalid start request", problems)


def input_problems(schema: Any, value: JSON) -> list[Problem]:
    """Every way ``value`` breaks the definition's ``input_schema`` (exact numbers)."""
    if not schema:
        return []
    errors = sorted(ExactValidator(schema).iter_errors(value),
                    key=lambda e: [str(p) for p in e.absolute_path])
    return [
        Problem("$.input" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                                    for p in e.absolute_path), "schema_violation", e.message)
        for e in errors
    ]


def _key_read() -> sa.Select[Any]:
    k = weave_idempotency
    return sa.select(k.c.request_hash, k.c.instance_id).where(
        k.c.namespace == sa.bindparam("w_ns"), k.c.operation_type == sa.bindparam("w_op"),
        k.c.idempotency_key == sa.bindparam("w_key"))


def _key_params(namespace: str, request: StartRequest) -> dict[str, Any]:
    return {"w_ns": namespace, "w_op": request.operation_type,
            "w_key": request.idempotency_key}


def _no_namespace(namespace: str) -> NotFoundError:
    return NotFoundError(f"namespace {namespace!r} not found", details={"namespace": namespace})


def _existing(conn: Connection, namespace: str, request: StartRequest) -> InstanceView | None:
    row = conn.execute(_key_read(), _key_params(namespace, request)).one_or_none()
    return _original(conn, namespace, request, row)


def _original(conn: Connection, namespace: str, request: StartRequest, row: Any
              ) -> InstanceView | None:
    """The instance an earlier start of this key created (``row``: its idempotency row, or
    None), or a conflict when the key came with another request."""
    if row is None:
        return None
    if row.request_hash != request.request_hash():
        raise IdempotencyConflictError(
            "this idempotency key was used with a different request",
            details={"idempotency_key": request.idempotency_key,
                     "operation_type": request.operation_type, "workflow_id": row.instance_id},
        )
    return read_instance(conn, namespace, row.instance_id)


def _instance_read() -> sa.Select[Any]:
    i = weave_instances
    return sa.select(i).where(i.c.instance_id == sa.bindparam("w_instance_id"),
                              i.c.namespace == sa.bindparam("w_namespace"))


def read_instance(conn: Connection, namespace: str, instance_id: str) -> InstanceView:
    """The instance's view (a start's answer: read with the writes queued before it)."""
    rows = read_with_queue(conn, "instance_view", _instance_read,
                           {"w_instance_id": instance_id, "w_namespace": namespace})
    row = rows[0] if rows else None
    if row is None:
        raise NotFoundError(f"workflow {instance_id!r} not found",
                            details={"workflow_id": instance_id})
    return InstanceView.from_row(row)


def queues_of(program: Program) -> list[str]:
    """The sorted queues the version's steps use (locked in this order, R-6.2)."""
    return list(program.queues())


def start_workflow(
    engine: Engine, namespace: str, request: StartRequest, *, actor: str
) -> StartResult:
    """Start (or find the original of) one instance; see the module docstring."""
    _check(request)
    version = request.version or LATEST
    head = start_heads.guess(engine, namespace, request.definition_id, version)
    if head is not None and engine.db.dialect == "mysql" and programs(engine).cached(
            (namespace, head.definition_id, head.version)) is not None:
        try:  # no look-up: the guess is checked in the start's own opening reads
            return _start_workflow(engine, namespace, request, actor, head)
        except (start_heads.StaleHead, ValidationError):  # a newer head, or a refusal the
            pass  # look-up may turn into the original start: the long way decides
    start_heads.forget(engine, namespace, request.definition_id, version)
    return _start_workflow(engine, namespace, request, actor, None)


def _start_workflow(engine: Engine, namespace: str, request: StartRequest, actor: str,
                    guessed: DefinitionHead | None) -> StartResult:
    db = engine.db
    record: InstanceView | DefinitionHead
    if guessed is None:
        record = db.read(  # one read: the original start, else the definition
            lambda conn: _lookup(conn, namespace, request), name="start_lookup")
        if isinstance(record, InstanceView):
            return StartResult(False, record)
        start_heads.remember(engine, namespace, request.definition_id,
                             request.version or LATEST, record)
    else:
        record = guessed
    cache = programs(engine)
    key = (namespace, record.definition_id, record.version)
    program = cache.cached(key)
    if program is None:  # first start of this version in this process: its document
        full = get_definition(db, namespace, record.definition_id, record.version)
        program = cache.compile_document(key, full.document)
    problems = input_problems(program.field("input_schema"), request.input)
    if problems:
        raise ValidationError("the input does not match the definition's input_schema",
                              problems)
    queues = queues_of(program)
    seconds = program.field("deadline_seconds") or engine.limits.max_deadline_seconds
    policy = program.field("failure_policy") or FailurePolicy.REVIEW.value
    wait_problems = start_problems(program, int(seconds), engine.limits)
    if wait_problems:
        raise ValidationError("the definition's waits do not fit this start", wait_problems)
    config = freeze(program, engine.limits, failure_policy=policy,
                    deadline_seconds=int(seconds))

    def _start(conn: Connection, budgeted: bool = False) -> StartResult:
        budget: Budget | None = None
        if deferring_now(conn):  # MariaDB: the five opening reads in one round trip
            counters = sorted({QUOTA, *queues})  # what the takes compare with (releases)
            reads = [("idempotency", _key_read, _key_params(namespace, request)),
                     (f"released.{len(counters)}", lambda: sums_read(len(counters)),
                      sums_params(namespace, counters))]
            if guessed is not None:  # the name's head, read with the locks
                reads.append(start_heads.head_read(namespace, request.definition_id,
                                                   request.version))
            found, read_rows, quota_row, queue_rows, now_row = lock_admission_at_once(
                conn, namespace=namespace, queues=queues, now_columns=db.now_columns,
                reads=reads)
            keys, sums = read_rows[0], read_rows[1]
            if found is None:
                raise _no_namespace(namespace)
            if guessed is not None and not keys:  # an original start answers as it is
                start_heads.check(read_rows[2], guessed)
            remember(conn, namespace, counters, [tuple(row) for row in sums])
            again = _original(conn, namespace, request, keys[0] if keys else None)
            if again is not None:
                return StartResult(False, again)
            now = db.now_of(now_row)
            if budgeted:  # the units free under the locks just taken (dispatch.ledger)
                budget = budget_of(conn, namespace, quota_row, queue_rows)
        else:
            if lock_namespace_shared(conn, namespace) is None:
                raise _no_namespace(namespace)
            again = _existing(conn, namespace, request)
            if again is not None:
                return StartResult(False, again)
            if guessed is not None and guessed != definition_head_txn(
                    conn, namespace, request.definition_id, request.version or LATEST):
                raise start_heads.StaleHead
            lock_capacity_txn(conn, namespace, queues)
            now = db.now(conn)
        if budget is None:
            return _create(conn, now, None)
        with capacity_ledger(conn, namespace, budget) as ledger:
            return _create(conn, now, ledger)

    def _create(conn: Connection, now: datetime, ledger: CapacityLedger | None
                ) -> StartResult:
        instance_id = new_instance_id()
        gate_id = create_gate_txn(conn, namespace=namespace, now=now)
        deadline_at = now + timedelta(seconds=int(seconds))
        config_hash = store_txn(conn, config, engine.limits, now)
        # A duplicate key (another start with this key committed meanwhile) surfaces as
        # IntegrityError when the queue is sent, still inside this transaction (below).
        insert_rows(conn, weave_idempotency, dict(
            namespace=namespace, operation_type=request.operation_type,
            idempotency_key=request.idempotency_key, request_hash=request.request_hash(),
            instance_id=instance_id, created_at=now,
        ))
        inserted = dict(
            instance_id=instance_id, namespace=namespace, definition_id=record.definition_id,
            version=record.version, content_hash=record.content_hash,
            input=exactjson.dumps(request.input), queues=exactjson.dumps(queues),
            failure_policy=policy, status=InstanceStatus.RUNNING.value, paused=False,
            control_version=0, revision=0, root_version=0, gate_id=gate_id,
            deadline_at=deadline_at, output=None, review_reason=None,
            operation_type=request.operation_type, idempotency_key=request.idempotency_key,
            created_by=actor, created_at=now, updated_at=now, settled_at=None,
            config_hash=config_hash,
        )
        insert_rows(conn, weave_instances, inserted)
        li = LockedInstance(
            instance_id=instance_id, namespace=namespace, definition_id=record.definition_id,
            version=record.version, content_hash=record.content_hash,
            input=exactjson.canonicalize(request.input), queues=tuple(queues),
            failure_policy=policy, status=InstanceStatus.RUNNING, paused=False,
            gate_id=gate_id, gate_open=True, namespace_disabled=False,
            deadline_at=deadline_at, revision=0, root_version=0, control_version=0,
            review_reason=None, steps={}, config_hash=config_hash,
        )
        operation_id = new_operation_id()
        history = History(namespace, instance_id, 0, operation_id, now)
        history.record("instance.created", to_state=InstanceStatus.RUNNING.value,
                       details={"definition_id": record.definition_id,
                                "version": record.version,
                                "deadline_at": deadline_at.isoformat() + "Z"})
        if parked is None:
            outcome = advance_txn(conn, engine, li, history, program, now=now)
        else:  # a worker waiting for the first tasks takes them at once (dispatch.handoff)
            with parked.offering(conn) as handoff:
                outcome = advance_txn(conn, engine, li, history, program, now=now)
            later(conn, lambda: remember_routes(engine, handoff, instance_id, li.queues,
                                                li.status.value))
        schedule_new_txn(conn, namespace=namespace, instance_id=instance_id,
                     kind=PendingKind.ROOT, ref=DEADLINE_REF, due_at=deadline_at,
                     reason=PendingReason.DEADLINE.value, root_version=li.root_version,
                     root_identity=li.root_identity, now=now)
        history.write(conn, actor=actor, action="workflow.started", metadata={
            "definition_id": record.definition_id, "version": record.version,
            "requested_version": request.version, "idempotency_key": request.idempotency_key,
            "operation_type": request.operation_type, "decisions": outcome.applied,
            "deferred": outcome.deferred,
        })
        # The answer is the row as this transaction leaves it: inserted above, then the
        # columns the flush wrote (no read-back: on MariaDB the start's last writes then go
        # with its COMMIT).
        written = li.flush(conn, revision=history.revision, now=now)
        if ledger is not None:  # the budget's takes: one UPDATE per counter, queued
            ledger.apply(conn, now)
        return StartResult(True, InstanceView.from_row({**inserted, **written}))

    def _queued(conn: Connection, budgeted: bool = True) -> StartResult:
        # The writes that return nothing are queued and sent together with the next
        # statement that needs an answer (weave_core.storage.deferred): a start of a sequence
        # takes a third of the round trips.
        with deferring(conn):
            return _start(conn, budgeted)

    def _started() -> StartResult:
        try:
            try:
                return db.transaction(_queued, name="start_workflow")
            except CapacityLocksNeeded:  # more than the free units: the classic start, whose
                child(CAPACITY_RERUNS, "start_workflow").inc()  # reservations meet the limit
                return db.transaction(
                    lambda conn: _queued(conn, budgeted=False), name="start_workflow")
        except DeferredWriteMismatch as exc:  # a queued write met an unexpected row count:
            logger.info("start of %s: %s; starting again statement by statement",
                        request.definition_id, exc)  # one by one, every count is seen
            return db.transaction(_start, name="start_workflow")

    with (parked_claimer(db, namespace) if db.dialect == "mysql"
          else nullcontext()) as parked:
        try:
            return _started()
        except IntegrityError:
            # Another start with this key committed between our check and our insert.
            return _started()


def _lookup(conn: Connection, namespace: str, request: StartRequest
            ) -> InstanceView | DefinitionHead:
    """The original start of this key, or else the definition version to start (which
    version a name means, not its document: the program is compiled once per process)."""
    return _existing(conn, namespace, request) or definition_head_txn(
        conn, namespace, request.definition_id, request.version or LATEST)


__all__ = [
    "DEFAULT_OPERATION_TYPE",
    "IdempotencyConflictError",
    "StartRequest",
    "StartResult",
    "input_problems",
    "queues_of",
    "read_instance",
    "start_workflow",
]
