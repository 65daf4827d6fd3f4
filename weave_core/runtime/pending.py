"""Pending advances: the due index of deferred work (R-6.1, R-6.4, R-6.5).

One row per (instance, kind, ref), reused. Kinds: ``ROOT`` (ref ``""``: a checkpoint after
the change budget ran out, or a retry after a full queue or quota; ref ``"deadline"``: the
instance deadline), ``TIMER``, ``POLL``, ``SIGNAL`` (ref: the activation). Written only
by transactions that hold the instance lock, so a plain read under that lock is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.storage.schema import weave_pending_advances
from weave_core.storage.statements import insert_rows, update_keyed


class PendingKind(StrEnum):
    ROOT = "ROOT"
    TIMER = "TIMER"
    POLL = "POLL"
    SIGNAL = "SIGNAL"


WAIT_KINDS: Final = frozenset({PendingKind.TIMER, PendingKind.POLL, PendingKind.SIGNAL})
"""Kinds whose ``ref`` is a waiting activation (its wait record decides what they mean)."""


class PendingState(StrEnum):
    PENDING = "PENDING"
    DONE = "DONE"
    REFUSED = "REFUSED"


class PendingReason(StrEnum):
    BUDGET = "budget"
    """The change budget of one advance ran out (a checkpoint any node continues)."""
    QUEUE_FULL = "queue_full"
    QUOTA_EXCEEDED = "quota_exceeded"
    DEADLINE = "deadline"
    TIMER = "timer"
    PAUSED = "paused"
    GATE_CLOSED = "gate_closed"
    NAMESPACE_DISABLED = "namespace_disabled"
    """Successors wait for a pause, a closed gate or a disabled namespace (R-6.6)."""


ROOT_REF: Final = ""
DEADLINE_REF: Final = "deadline"
FULL_BACKOFF_CAP_S: Final = 30
"""Longest wait between two checks of a persistently full queue or quota."""


def full_backoff(attempts: int) -> timedelta:
    """1, 2, 4 … 30 s: how long a persistently full queue or quota waits before a re-check."""
    return timedelta(seconds=min(FULL_BACKOFF_CAP_S, 2 ** min(attempts, 5)))


def _new_row(*, namespace: str, instance_id: str, kind: PendingKind, ref: str,
             due_at: datetime, reason: str, root_version: int, root_identity: str,
             now: datetime) -> dict[str, Any]:
    return dict(
        namespace=namespace, instance_id=instance_id, kind=kind.value, ref=ref,
        due_at=due_at, state=PendingState.PENDING.value, version=1, reason=reason,
        root_version=root_version, root_identity=root_identity, attempts=0,
        created_at=now, updated_at=now,
    )


def schedule_new_txn(
    conn: Connection, *, namespace: str, instance_id: str, kind: PendingKind, ref: str,
    due_at: datetime, reason: str, root_version: int, root_identity: str, now: datetime,
) -> None:
    """Arm the pending row of (instance, kind, ref) of an instance created in this very
    transaction, which therefore has none yet: no read, and the INSERT is queued in a
    start's deferring block (its id is not needed)."""
    insert_rows(conn, weave_pending_advances, _new_row(
        namespace=namespace, instance_id=instance_id, kind=kind, ref=ref, due_at=due_at,
        reason=reason, root_version=root_version, root_identity=root_identity, now=now))


def schedule_txn(
    conn: Connection,
    *,
    namespace: str,
    instance_id: str,
    kind: PendingKind,
    ref: str,
    due_at: datetime,
    reason: str,
    root_version: int,
    root_identity: str,
    now: datetime,
) -> int:
    """Arm (insert or re-arm) the pending row of (instance, kind, ref); return its id.

    Re-arming for the same "full" reason counts ``attempts`` up (the caller computes
    ``due_at`` from it); any other reason resets it.
    """
    p = weave_pending_advances
    row = conn.execute(
        sa.select(p.c.id, p.c.version, p.c.reason, p.c.attempts, p.c.state).where(
            p.c.instance_id == instance_id, p.c.kind == kind.value, p.c.ref == ref
        )
    ).one_or_none()
    if row is None:
        result = conn.execute(sa.insert(p), _new_row(
            namespace=namespace, instance_id=instance_id, kind=kind, ref=ref, due_at=due_at,
            reason=reason, root_version=root_version, root_identity=root_identity, now=now))
        key = result.inserted_primary_key
        assert key is not None
        return int(key[0])
    attempts = int(row.attempts) + 1 if row.reason == reason else 0
    conn.execute(
        sa.update(p)
        .where(p.c.id == row.id)
        .values(
            state=PendingState.PENDING.value, due_at=due_at, reason=reason,
            version=int(row.version) + 1, root_version=root_version,
            root_identity=root_identity, attempts=attempts, updated_at=now,
        )
    )
    return int(row.id)


def full_attempts(conn: Connection, instance_id: str, reason: str) -> int:
    """How many times in a row the ROOT retry found the same queue/quota full."""
    p = weave_pending_advances
    row = conn.execute(
        sa.select(p.c.reason, p.c.attempts).where(
            p.c.instance_id == instance_id, p.c.kind == PendingKind.ROOT.value,
            p.c.ref == ROOT_REF,
        )
    ).one_or_none()
    if row is None or row.reason != reason:
        return 0
    return int(row.attempts) + 1


def finish_txn(conn: Connection, pending_id: int, version: int, state: PendingState,
               now: datetime) -> None:
    """Mark one pending row done (or refused), bumping its version."""
    update_keyed(conn, weave_pending_advances, {"id": pending_id},
                 {"state": state.value, "version": version + 1, "updated_at": now})


def finish_many_txn(conn: Connection, pending_ids: Sequence[int], now: datetime) -> None:
    """Mark PENDING rows the caller holds locked done, each version bumped by one (a tick
    batch; the caller read them PENDING under its lock, so every one of them matches)."""
    if not pending_ids:
        return
    p = weave_pending_advances
    done = conn.execute(
        sa.update(p)
        .where(p.c.id.in_(sorted(pending_ids)), p.c.state == PendingState.PENDING.value)
        .values(state=PendingState.DONE.value, version=p.c.version + 1, updated_at=now)
    ).rowcount
    if done != len(pending_ids):
        raise RuntimeError(f"{done} of {len(pending_ids)} locked pending rows were PENDING")


_P = weave_pending_advances
_CLOSE_ALL = (  # built once: every completing instance runs it (see weave_core.storage.statements)
    sa.update(_P)
    .where(_P.c.instance_id == sa.bindparam("instance"),
           _P.c.state == PendingState.PENDING.value)
    .values(state=PendingState.DONE.value, version=_P.c.version + 1,
            updated_at=sa.bindparam("now"))
)


def close_all_txn(conn: Connection, instance_id: str, now: datetime) -> None:
    """A settled instance needs no deferred work: mark its pending rows done."""
    conn.execute(_CLOSE_ALL, {"instance": instance_id, "now": now})


__all__ = [
    "DEADLINE_REF",
    "FULL_BACKOFF_CAP_S",
    "ROOT_REF",
    "WAIT_KINDS",
    "PendingKind",
    "PendingReason",
    "PendingState",
    "close_all_txn",
    "finish_many_txn",
    "finish_txn",
    "full_attempts",
    "full_backoff",
    "schedule_new_txn",
    "schedule_txn",
]
