"""Capacity given back without the counter's row lock: release shards.

Why: every settled task gives back one unit of its queue's capacity and one of its
namespace's quota. With one counter row each, concurrent settles — the ten branches of a
fan-out finishing together, a burst of instances ending while others start — queue on
that row's exclusive lock, and a step that finds it held had to re-run in the lock order
and wait (``dispatch.queues.CapacityLedger``).

The design: a counter keeps its one row (``weave_namespace_quotas`` or ``weave_queues``),
where units are **taken** — a take checks a limit, so it needs one exact number under one
lock — and gains :data:`SHARDS` rows in ``weave_capacity_releases`` where units are
**given back** by transactions that do not hold the counter's lock. A release takes any
shard no other transaction holds (``SKIP LOCKED``: it never waits, so it cannot close a
deadlock cycle and may come after the instance locks) and adds to its ``released``.

    outstanding = counter row's ``outstanding`` - sum of its shards' ``released``

Shards only ever grow. That is what keeps I5 (capacity and quota never exceeded) exact
under concurrency: a take reads the shards' sum from its snapshot, which can only be
*older*, hence smaller, than the truth, so the ``outstanding`` it computes is never below
the real one — a take may be refused a unit released a moment ago (it is retried or waits
as any full queue does), never granted one that is not free. The counter row is always
read under its lock, so it is current. A release that holds the counter's lock (the
in-order path) still decrements the row itself. Both columns are BIGINT: the row counts
every unit ever given back through a shard.

``counter`` is ``""`` for the namespace quota and the queue's name for a queue (a queue
name is never empty). On SQLite, whose writers are serialised, the first shard is used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.storage.deferred import deferring_now, send_with
from weave_core.storage.schema import weave_capacity_releases
from weave_core.storage.statements import (
    insert_missing,
    prebuilt_sql,
    read_with_queue,
    run_prebuilt,
)

SHARDS: Final = 16
"""Release shards per counter (the migration that made them used the same number; code
reads whatever shards exist)."""
QUOTA: Final = ""
"""The ``counter`` of the namespace quota's shards."""

_R = weave_capacity_releases
_SUMS_KEY: Final = "weave_released_sums"


def create_shards(conn: Connection, namespace: str, counter: str) -> None:
    """The counter's shards, unless they exist (called where its row is created)."""
    insert_missing(conn, _R, [{"namespace": namespace, "counter": counter, "shard": shard,
                               "released": 0} for shard in range(SHARDS)])


def sums_read(count: int) -> sa.Select[Any]:
    """The shard sums of ``count`` counters (bound as ``c0``, ``c1``, ...; see
    :func:`sums_params`), rows of ``(counter, released)``."""
    return (sa.select(_R.c.counter, sa.func.sum(_R.c.released).label("released"))
            .where(_R.c.namespace == sa.bindparam("ns"),
                   _R.c.counter.in_([sa.bindparam(f"c{i}") for i in range(count)]))
            .group_by(_R.c.counter))


def _sums(conn: Connection) -> dict[tuple[str, str], int]:
    """This transaction's shard sums read so far (namespace, counter → released)."""
    txn = conn.get_transaction()
    cached: tuple[Any, dict[tuple[str, str], int]] | None = conn.info.get(_SUMS_KEY)
    if cached is None or cached[0] is not txn:
        cached = (txn, {})
        conn.info[_SUMS_KEY] = cached
    return cached[1]


def prefetch(conn: Connection, namespace: str, counters: Sequence[str]) -> None:
    """Read the shard sums of ``counters`` now — on MariaDB in one round trip with the
    writes queued before — so that this transaction's takes need no read of their own
    (see :func:`released`)."""
    wanted = sorted(set(counters))
    if not wanted:
        return
    rows = read_with_queue(conn, f"released_sums.{len(wanted)}",
                           lambda: sums_read(len(wanted)),
                           sums_params(namespace, wanted))
    remember(conn, namespace, wanted, [(row["counter"], row["released"]) for row in rows])


def sums_params(namespace: str, counters: Sequence[str]) -> dict[str, Any]:
    """The parameters of :func:`sums_read` for ``counters``."""
    return {"ns": namespace, **{f"c{i}": c for i, c in enumerate(counters)}}


def remember(conn: Connection, namespace: str, counters: Sequence[str],
             rows: Sequence[tuple[Any, Any]]) -> None:
    """Keep the sums a caller read with :func:`sums_read` (``(counter, released)`` rows)
    as this transaction's, for :func:`released`."""
    found = {str(counter): int(value) for counter, value in rows}
    sums = _sums(conn)
    for counter in counters:
        sums[(namespace, counter)] = found.get(counter, 0)


def released(conn: Connection, namespace: str, counter: str) -> int:
    """What the counter's shards hold, as this transaction's snapshot sees it: read once
    per transaction and counter (a later read could only be larger; module docstring)."""
    sums = _sums(conn)
    if (namespace, counter) not in sums:
        prefetch(conn, namespace, [counter])
    return sums[(namespace, counter)]


def _take_shard() -> sa.Select[Any]:
    """A free shard of a counter, locked without waiting (SQLite, whose writers are
    serialised, renders no lock clause)."""
    return (sa.select(_R.c.shard)
            .where(_R.c.namespace == sa.bindparam("ns"), _R.c.counter == sa.bindparam("w_counter"))
            .order_by(_R.c.shard).limit(1).with_for_update(skip_locked=True))


_ADD = (
    sa.update(_R)
    .where(_R.c.namespace == sa.bindparam("ns"), _R.c.counter == sa.bindparam("w_counter"),
           _R.c.shard == sa.bindparam("w_shard"))
    .values(released=_R.c.released + sa.bindparam("units"))
)


def give_back(conn: Connection, namespace: str, units: Mapping[str, int]) -> bool:
    """Give back ``units`` (counter → units, each above 0) through a free shard of each
    counter. False, with nothing written, when a counter has no shard free (or none yet):
    the caller takes the counter's own lock instead. On MariaDB the shard reads go in one
    round trip with the writes queued before them, and the additions are queued."""
    counters = sorted(units)
    params = [{"ns": namespace, "w_counter": counter} for counter in counters]
    shards: list[Any]
    prebuilt = prebuilt_sql(conn, "take_release_shard", _take_shard)
    if prebuilt is not None and deferring_now(conn):
        text, literals = prebuilt
        answers = send_with(conn, [(text, {**literals, **p}) for p in params])
        shards = [answer.rows[0][0] if answer.rows else None for answer in answers]
    else:
        shards = [conn.execute(_take_shard(), p).scalar_one_or_none() for p in params]
    if any(shard is None for shard in shards):
        return False
    for counter, shard, p in zip(counters, shards, params, strict=True):
        run_prebuilt(conn, "release_shard_add", lambda: _ADD,
                     {**p, "w_shard": int(shard), "units": units[counter]}, queue=True, rows=1)
    return True


def outstanding_of(table: sa.Table, counter: sa.ColumnElement[str]) -> sa.ColumnElement[int]:
    """``table.outstanding`` minus its counter's shards (for reads of the true count)."""
    given = (sa.select(sa.func.coalesce(sa.func.sum(_R.c.released), 0))
             .where(_R.c.namespace == table.c.namespace, _R.c.counter == counter)
             .scalar_subquery())
    return (table.c.outstanding - given).label("outstanding")


__all__ = ["QUOTA", "SHARDS", "create_shards", "give_back", "outstanding_of", "prefetch",
           "released", "remember", "sums_params", "sums_read"]
