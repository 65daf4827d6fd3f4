"""Locks of levels 1-5 and the instance chain: namespace, quota, queues, instance,
gate, an instance's steps (R-6.2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Connection, Row

from weave_core.storage.locks.order import (
    LockLevel,
    _lock_key,
    _lock_keyed,
    _lock_many,
    lock_rows,
)
from weave_core.storage.schema import (
    weave_execution_gates,
    weave_instances,
    weave_namespace_quotas,
    weave_namespaces,
    weave_queues,
    weave_steps,
)

# --- 1. identity ---------------------------------------------------------------------


def lock_namespace_shared(conn: Connection, namespace: str, *,
                          columns: tuple[str, ...] | None = None) -> Row[Any] | None:
    """The identity lock: the namespace row, shared; None if the namespace does not exist.

    Shared, so operations in one namespace do not serialise on it; disabling or deleting
    the namespace (exclusive) waits for them. ``columns``: only these (the hot path's).
    """
    return _lock_key(conn, LockLevel.IDENTITY, weave_namespaces, {"name": namespace},
                     shared=True, columns=columns)


def lock_namespace_exclusive(conn: Connection, namespace: str) -> Row[Any] | None:
    """The namespace row, exclusive: for changes to the namespace itself (disable)."""
    return _lock_key(conn, LockLevel.IDENTITY, weave_namespaces, {"name": namespace})


# --- 2. namespace quota ----------------------------------------------------------------


def lock_namespace_quota(conn: Connection, namespace: str) -> Row[Any] | None:
    """The namespace's task quota row, exclusive (None until the first task creates it)."""
    return _lock_key(conn, LockLevel.NAMESPACE_QUOTA, weave_namespace_quotas,
                     {"namespace": namespace})


# --- 3. queues -------------------------------------------------------------------------


def lock_queues(conn: Connection, namespace: str, names: Sequence[str]) -> list[Row[Any]]:
    """The queue rows named, exclusive, locked in sorted name order (missing ones skipped)."""
    q = weave_queues
    wanted = sorted(set(names))
    if not wanted:
        return []
    return list(
        lock_rows(
            conn,
            LockLevel.QUEUES,
            q,
            (q.c.namespace == namespace) & q.c.name.in_(wanted),
            order_by=(q.c.name,),
        )
    )


# --- 5. gate ---------------------------------------------------------------------------


def lock_gate(conn: Connection, gate_id: str, *,
              columns: tuple[str, ...] | None = None) -> Row[Any] | None:
    """One execution gate, exclusive (``columns``: only these)."""
    return _lock_key(conn, LockLevel.GATE, weave_execution_gates, {"gate_id": gate_id},
                     columns=columns)



# --- runtime (issue 5): instance, steps, activations, inbox rows, pending advances ------


def lock_instance(conn: Connection, instance_id: str, *,
                  columns: tuple[str, ...] | None = None) -> Row[Any] | None:
    """The workflow instance row, exclusive (level 4; ``columns``: only these)."""
    return _lock_key(conn, LockLevel.INSTANCE, weave_instances, {"instance_id": instance_id},
                     columns=columns)


def lock_instances(conn: Connection, instance_ids: Sequence[str], *,
                   skip_locked: bool = False) -> Sequence[Row[Any]]:
    """Several instance rows, exclusive, in instance-id order (a tick batch; level 4).

    ``skip_locked``: leave out rows another transaction holds instead of waiting for them
    (another engine's batch is working on them; primary-key lookups, so only the rows
    returned are locked).
    """
    return _lock_many(conn, LockLevel.INSTANCE, weave_instances, "instance_id", instance_ids,
                      skip_locked=skip_locked)


def lock_gates(conn: Connection, gate_ids: Sequence[str]) -> Sequence[Row[Any]]:
    """Several execution gates, exclusive, in gate-id order (a tick batch; level 5)."""
    return _lock_many(conn, LockLevel.GATE, weave_execution_gates, "gate_id", gate_ids)


def lock_steps_of(conn: Connection, instance_ids: Sequence[str]) -> Sequence[Row[Any]]:
    """The steps of several instances, exclusive, in (instance, step) order (level 6;
    primary-key ranges)."""
    t = weave_steps
    return lock_rows(conn, LockLevel.RECORDS, t, t.c.instance_id.in_(sorted(set(instance_ids))),
                     order_by=(t.c.instance_id, t.c.step_id))


def lock_steps(conn: Connection, instance_id: str, *,
               columns: tuple[str, ...] | None = None) -> Sequence[Row[Any]]:
    """Every saved step of the instance, exclusive, in step-id order (level 6; served by
    the primary key ``(instance_id, step_id)``; ``columns``: only these)."""
    return _lock_keyed(conn, LockLevel.RECORDS, weave_steps, {"instance_id": instance_id},
                       order_by=("step_id",), columns=columns)
