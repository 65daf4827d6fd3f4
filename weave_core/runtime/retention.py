"""History retention (R-11.1): settled instances older than their namespace's retention
are removed with every row they own, in bounded batches by the tick; never an unsettled one.

Each namespace keeps settled instances for ``retention_days`` (``weave_namespaces``, set by
``weave namespace retention NS --days N``; NULL means ``DEFAULT_RETENTION_DAYS``). At most
every ``PURGE_INTERVAL_S`` a process's tick looks, per namespace, for instances settled
before the cutoff (``ix_weave_instances_settled``) and purges at most ``PURGE_BATCH`` of
them, one transaction each: identity (shared) → the instance (exclusive, level 4) → its
status re-checked (terminal, settled before the cutoff) → its rows deleted. A terminal
instance creates and settles no task, so no quota or queue lock is needed. What stays is
one audit row ``workflow.purged`` per instance (its counts), which is how the purge is
counted (``purged_count``, ``weave namespace retention``, the tick report).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import weakref
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.access.audit import write_audit
from weave_core.access.identity import CLI_ACTOR
from weave_core.engine import Engine
from weave_core.foundation.errors import NotFoundError, Problem, ValidationError
from weave_core.runtime.instances import TERMINAL, InstanceStatus
from weave_core.storage.db import Database
from weave_core.storage.locks import lock_instance, lock_namespace_shared
from weave_core.storage.schema import (
    weave_activations,
    weave_audit,
    weave_execution_gates,
    weave_idempotency,
    weave_inbox,
    weave_instances,
    weave_namespaces,
    weave_operations,
    weave_pending_advances,
    weave_poll_rounds,
    weave_signals,
    weave_steps,
    weave_task_attempts,
    weave_task_events,
    weave_tasks,
    weave_transitions,
    weave_waits,
)

logger = logging.getLogger(__name__)

DEFAULT_RETENTION_DAYS: Final = 30
"""How long a settled instance is kept when its namespace sets nothing."""
MAX_RETENTION_DAYS: Final = 36_500
PURGE_BATCH: Final = 20
"""Instances one purge removes per namespace (one transaction each)."""
PURGE_INTERVAL_S: Final = 60.0
"""A process's tick purges at most this often."""
PURGED_ACTION: Final = "workflow.purged"


@dataclass
class PurgeReport:
    purged: dict[str, list[str]] = field(default_factory=dict)
    """Namespace → the instance ids removed."""

    @property
    def count(self) -> int:
        return sum(len(ids) for ids in self.purged.values())


def set_retention(db: Database, namespace: str, days: int | None, *,
                  actor: str = CLI_ACTOR) -> None:
    """Set (or with None reset to the default) a namespace's retention, audited."""
    if days is not None and not 1 <= days <= MAX_RETENTION_DAYS:
        raise ValidationError("invalid retention", [Problem(
            "$.days", "out_of_range", f"retention is 1 to {MAX_RETENTION_DAYS} days")])

    def _set(conn: Connection) -> None:
        n = weave_namespaces
        if conn.execute(sa.update(n).where(n.c.name == namespace)
                        .values(retention_days=days)).rowcount == 0:
            raise NotFoundError(f"namespace {namespace!r} not found",
                                details={"namespace": namespace})
        write_audit(conn, namespace=namespace, actor=actor, action="namespace.retention",
                    object_type="namespace", object_id=namespace,
                    metadata={"retention_days": days}, at=db.now(conn))

    db.transaction(_set, name="set_retention")


def retention_of(db: Database, namespace: str) -> tuple[int, bool]:
    """(days, whether it is the default) of ``namespace``."""
    n = weave_namespaces
    row = db.read(lambda conn: conn.execute(sa.select(n.c.retention_days)
                                            .where(n.c.name == namespace)).one_or_none())
    if row is None:
        raise NotFoundError(f"namespace {namespace!r} not found", details={"namespace": namespace})
    days = row.retention_days
    return (DEFAULT_RETENTION_DAYS, True) if days is None else (int(days), False)


def purged_count(db: Database, namespace: str) -> int:
    """How many instances of ``namespace`` the purge has removed (their audit rows)."""
    a = weave_audit
    return int(db.read(lambda conn: conn.execute(
        sa.select(sa.func.count()).select_from(a).where(
            a.c.namespace == namespace, a.c.object_type == "workflow",
            a.c.action == PURGED_ACTION)).scalar_one()))


def purge_expired(engine: Engine, *, batch: int = PURGE_BATCH) -> PurgeReport:
    """One purge pass over every namespace (at most ``batch`` instances each)."""
    db = engine.db
    report = PurgeReport()
    n, i = weave_namespaces, weave_instances

    def _candidates(conn: Connection) -> list[tuple[str, str, datetime]]:
        now = db.now(conn)
        found: list[tuple[str, str, datetime]] = []
        for name, days in conn.execute(sa.select(n.c.name, n.c.retention_days)).all():
            cutoff = now - timedelta(days=DEFAULT_RETENTION_DAYS if days is None else days)
            for (iid,) in conn.execute(
                sa.select(i.c.instance_id).where(
                    i.c.namespace == name, i.c.settled_at.is_not(None),
                    i.c.settled_at < cutoff)
                .order_by(i.c.settled_at, i.c.instance_id).limit(batch)
            ).all():
                found.append((str(name), str(iid), cutoff))
        return found

    for namespace, instance_id, cutoff in db.read(_candidates, name="purge_candidates"):
        try:
            if db.transaction(functools.partial(_purge_txn, engine=engine, namespace=namespace,
                                                instance_id=instance_id, cutoff=cutoff),
                              name="purge_instance"):
                report.purged.setdefault(namespace, []).append(instance_id)
        except Exception:
            logger.exception("could not purge instance %s of %s", instance_id, namespace)
    for namespace, ids in report.purged.items():
        logger.info("retention purge removed %d settled instance(s) of namespace %s",
                    len(ids), namespace)
    return report


def _ids(conn: Connection, stmt: sa.Select[Any]) -> list[str]:
    return [str(v) for v in conn.execute(stmt).scalars().all()]


def _purge_txn(conn: Connection, *, engine: Engine, namespace: str, instance_id: str,
               cutoff: datetime) -> bool:
    if lock_namespace_shared(conn, namespace) is None:
        return False
    inst = lock_instance(conn, instance_id)
    if (inst is None or inst.namespace != namespace
            or InstanceStatus(inst.status) not in TERMINAL
            or inst.settled_at is None or inst.settled_at >= cutoff):
        return False  # unsettled (or no longer due): never purged
    a, t = weave_activations, weave_tasks
    activations = _ids(conn, sa.select(a.c.activation_id).where(
        a.c.namespace == namespace, a.c.instance_id == instance_id))
    tasks = _ids(conn, sa.select(t.c.task_id).where(
        t.c.namespace == namespace, t.c.owner_id.in_(activations))) if activations else []
    counts: dict[str, int] = {}

    def delete(table: sa.Table, *where: Any) -> None:
        counts[table.name] = int(conn.execute(sa.delete(table).where(*where)).rowcount or 0)

    if tasks:
        delete(weave_task_events, weave_task_events.c.task_id.in_(tasks))
        delete(weave_task_attempts, weave_task_attempts.c.task_id.in_(tasks))
        delete(weave_inbox, weave_inbox.c.namespace == namespace,
               weave_inbox.c.source_task_id.in_(tasks))
        delete(weave_audit, weave_audit.c.namespace == namespace,
               weave_audit.c.object_type == "task", weave_audit.c.object_id.in_(tasks))
        delete(weave_tasks, weave_tasks.c.task_id.in_(tasks))
    delete(weave_poll_rounds, weave_poll_rounds.c.namespace == namespace,
           weave_poll_rounds.c.instance_id == instance_id)
    delete(weave_waits, weave_waits.c.instance_id == instance_id)
    delete(weave_signals, weave_signals.c.instance_id == instance_id)
    delete(weave_pending_advances, weave_pending_advances.c.instance_id == instance_id)
    delete(weave_operations, weave_operations.c.namespace == namespace,
           weave_operations.c.instance_id == instance_id)
    delete(weave_transitions, weave_transitions.c.instance_id == instance_id)
    delete(weave_steps, weave_steps.c.instance_id == instance_id)
    delete(weave_activations, weave_activations.c.namespace == namespace,
           weave_activations.c.instance_id == instance_id)
    delete(weave_audit, weave_audit.c.namespace == namespace,
           weave_audit.c.object_type == "workflow", weave_audit.c.object_id == instance_id)
    delete(weave_idempotency, weave_idempotency.c.namespace == namespace,
           weave_idempotency.c.operation_type == inst.operation_type,
           weave_idempotency.c.idempotency_key == inst.idempotency_key,
           weave_idempotency.c.instance_id == instance_id)
    delete(weave_execution_gates, weave_execution_gates.c.gate_id == inst.gate_id)
    delete(weave_instances, weave_instances.c.instance_id == instance_id)
    write_audit(conn, namespace=namespace, actor=engine.actor, action=PURGED_ACTION,
                object_type="workflow", object_id=instance_id,
                metadata={"status": inst.status, "settled_at": inst.settled_at.isoformat() + "Z",
                          "rows": {k: v for k, v in sorted(counts.items()) if v}},
                at=engine.db.now(conn))
    return True


class _Schedule:
    """When each engine of this process last purged (keyed by the engine's identity; an
    entry goes when its engine is collected)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[int, float] = {}

    def due(self, engine: Engine) -> bool:
        now, key = time.monotonic(), id(engine)
        with self._lock:
            if key not in self._last:
                weakref.finalize(engine, self._last.pop, key, None)
            elif now - self._last[key] < PURGE_INTERVAL_S:
                return False
            self._last[key] = now
            return True


_schedule = _Schedule()


def purge_if_due(engine: Engine) -> PurgeReport | None:
    """The tick's call: a purge pass at most every ``PURGE_INTERVAL_S`` per engine."""
    return purge_expired(engine) if _schedule.due(engine) else None


__all__ = ["DEFAULT_RETENTION_DAYS", "PURGED_ACTION", "PURGE_BATCH", "PURGE_INTERVAL_S",
           "PurgeReport", "purge_expired", "purge_if_due", "purged_count", "retention_of",
           "set_retention"]
