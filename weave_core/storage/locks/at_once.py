"""A step transaction's locks sent in one round trip, in the lock order (one task, or several
tasks of one instance)."""

from __future__ import annotations

import json
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.storage.deferred import send_with
from weave_core.storage.locks.order import (
    _OBSERVER_KEY,
    LockLevel,
)
from weave_core.storage.locks.records import _task_fenced_select
from weave_core.storage.schema import (
    weave_activations,
    weave_execution_gates,
    weave_instances,
    weave_namespace_quotas,
    weave_namespaces,
    weave_queues,
    weave_steps,
    weave_tasks,
)

# --- a step's whole chain in one round trip (MariaDB/MySQL) -----------------------------


@dataclass(frozen=True)
class _Prebuilt:
    """A locking read compiled once for a dialect: its SQL text, its level and table (for
    the lock-order observer) and how a row of it is built (named fields, typed values)."""

    level: LockLevel | None
    """None: a plain read that travels with the locks (no lock, not observed)."""
    table: str
    shared: bool
    sql: str
    row: Callable[[tuple[Any, ...]], Any]
    defaults: dict[str, Any]


_PREBUILT: dict[tuple[Any, ...], _Prebuilt] = {}
_PACKED = json.JSONDecoder(parse_float=Decimal)
"""One decoder for every packed row (``json.loads`` with an option builds one a call)."""


def _prebuilt(conn: Connection, name: tuple[Any, ...], level: LockLevel | None,
              table: sa.Table, shared: bool, build: Callable[[], sa.Select[Any]]
              ) -> _Prebuilt:
    """Compile the read once, its columns **packed into one** ``JSON_ARRAY``.

    Why packed: PyMySQL decodes a result's description and every value column by column in
    Python, about 4-5 µs a column — a third of a step's client time went to the ~80 columns
    of these six reads. One JSON text per row is one column, decoded by the C ``json``
    parser; the values come back typed as a row of separate columns would bring them (the
    DATETIME text parsed, booleans as ``bool``; the numbers here are all integers).
    """
    key = (conn.dialect.name, *name)  # the shape: the read and the columns it selects
    found = _PREBUILT.get(key)
    if found is None:
        stmt = build() if level is None else build().with_for_update(read=shared)
        selected = list(stmt.selected_columns)
        names = [str(c.key) for c in selected]
        flags = [i for i, c in enumerate(selected) if isinstance(c.type, sa.Boolean)]
        times = [i for i, c in enumerate(selected) if isinstance(c.type, sa.DateTime)]
        record = namedtuple(f"{table.name}_row", names)  # type: ignore[misc]  # built once per shape

        def row(values: tuple[Any, ...], record: Any = record, flags: list[int] = flags,
                times: list[int] = times) -> Any:
            items = _PACKED.decode(values[0])
            for i in flags:
                if items[i] is not None:
                    items[i] = bool(items[i])
            for i in times:
                if items[i] is not None:
                    items[i] = datetime.fromisoformat(items[i])
            return record._make(items)

        packed = stmt.with_only_columns(
            sa.func.json_array(*(getattr(c, "element", c) for c in selected)))
        compiled = packed.compile(dialect=conn.dialect)
        defaults = {k: v for k, v in compiled.params.items() if v is not None}
        found = _PREBUILT[key] = _Prebuilt(level, table.name, shared, str(compiled), row,
                                           defaults)
    return found


def _send(conn: Connection, reads: Sequence[tuple[_Prebuilt, dict[str, Any]]]
          ) -> list[list[Any]]:
    """Send ``reads`` in one round trip (after the queued writes), in order; each read's
    rows. The lock-order observer sees every lock first, in the order the server takes them.
    """
    observer = conn.info.get(_OBSERVER_KEY)
    if observer is not None:
        for read, _ in reads:
            if read.level is not None:
                observer(read.level, read.table, read.shared)
    answers = send_with(conn, [(read.sql, {**read.defaults, **params} if read.defaults
                                else params) for read, params in reads], union=True)
    return [[read.row(values) for values in answer.rows]
            for (read, _), answer in zip(reads, answers, strict=True)]


def lock_admission_at_once(
    conn: Connection, *, namespace: str, queues: Sequence[str],
    now_columns: Sequence[sa.ColumnElement[Any]],
    reads: Sequence[tuple[str, Callable[[], sa.Select[Any]], dict[str, Any]]],
) -> tuple[Any, list[list[Any]], Any, list[Any], Any]:
    """A start's opening reads in one round trip (MariaDB/MySQL): the namespace (shared,
    level 1), ``reads`` — the caller's plain reads (``(name, build, params)``), e.g. its
    idempotency key — then the quota (level 2) and the ``queues`` (level 3, sorted), and
    database time last, after every lock, as :func:`lock_namespace_shared`,
    ``dispatch.queues.lock_capacity_txn`` and ``Database.now`` take them one by one.
    Returns the namespace row (None: no such namespace), the rows of each of ``reads``,
    the quota row (``task_quota``, ``outstanding``; None until first used), the queue rows
    found (``name``, ``capacity``, ``outstanding``), and the row ``Database.now_of`` reads
    the time from."""
    ns_t, qu_t, q_t = weave_namespaces, weave_namespace_quotas, weave_queues
    wanted = sorted(set(queues))
    names = {f"q{i}": name for i, name in enumerate(wanted)}
    batch: list[tuple[_Prebuilt, dict[str, Any]]] = [
        (_prebuilt(conn, ("admit.namespace",), LockLevel.IDENTITY, ns_t, True,
                   lambda: sa.select(ns_t.c.name).where(
                       ns_t.c.name == sa.bindparam("w_name"))), {"w_name": namespace}),
    ]
    for name, build, params in reads:
        batch.append((_prebuilt(conn, ("admit.read", name), None, ns_t, False, build), params))
    batch.append(
        (_prebuilt(conn, ("admit.quota",), LockLevel.NAMESPACE_QUOTA, qu_t, False,
                   lambda: sa.select(qu_t.c.task_quota, qu_t.c.outstanding).where(
                       qu_t.c.namespace == sa.bindparam("w_ns"))), {"w_ns": namespace}))
    if wanted:
        batch.append((_prebuilt(conn, ("admit.queues", len(wanted)), LockLevel.QUEUES, q_t,
                                False, lambda: sa.select(
                                    q_t.c.name, q_t.c.capacity, q_t.c.outstanding).where(
                                    q_t.c.namespace == sa.bindparam("w_ns"),
                                    q_t.c.name.in_([sa.bindparam(k) for k in names]))
                                .order_by(q_t.c.name)), {"w_ns": namespace, **names}))
    batch.append((_prebuilt(conn, ("admit.now",), None, ns_t, False,
                            lambda: sa.select(*now_columns)), {}))
    rows = _send(conn, batch)
    quota = rows[1 + len(reads)]
    found = rows[2 + len(reads)] if wanted else []
    return ((rows[0][0] if rows[0] else None), rows[1:1 + len(reads)],
            quota[0] if quota else None, found, rows[-1][0])


def lock_chain_of_tasks_at_once(
    conn: Connection, *, namespace: str, instance_id: str,
    tasks: Sequence[tuple[str, str, str]], now_columns: Sequence[sa.ColumnElement[Any]],
    columns: Mapping[str, tuple[str, ...]],
) -> tuple[Any, Any, Any, list[Any], list[Any], list[Any]]:
    """A step transaction's locks — namespace (shared), instance, its gate, its steps, then
    for each of ``tasks`` (activation, task and attempt ids) the owning activation, then
    the task with its attempt's fencing columns and database time — sent in **one** round
    trip (``deferred.send_with``), in exactly the order :func:`lock_namespace_shared`,
    :func:`lock_instance`, :func:`lock_gate`, :func:`lock_steps`, :func:`lock_activation`
    and :func:`lock_task_fenced` take them one by one (levels 1, 4, 5, 6, 6, 6: the lock
    order holds, and the observer sees each); activations then tasks each in id order.

    The gate is found through the instance row the previous statement locked (a
    subquery), so no answer is needed before the next read goes out. ``columns``: the
    narrow column lists of ``namespace``, ``instance``, ``gate`` and ``steps``. Returns
    the rows (None where missing; the steps as a list; activations and tasks in the order
    of ``tasks``); MariaDB/MySQL only."""
    ns_t, in_t, g_t, st_t = weave_namespaces, weave_instances, weave_execution_gates, weave_steps
    a_t = weave_activations

    def narrow(table: sa.Table, part: str) -> sa.Select[Any]:
        return sa.select(*(table.c[n] for n in columns[part]))

    gate_of_instance = sa.select(in_t.c.gate_id).where(
        in_t.c.instance_id == sa.bindparam("w_instance_id")).scalar_subquery()
    on_instance = {"w_instance_id": instance_id}
    reads: list[tuple[_Prebuilt, dict[str, Any]]] = [
        (_prebuilt(conn, ("chain.namespace", columns["namespace"]), LockLevel.IDENTITY, ns_t,
                   True, lambda: narrow(ns_t, "namespace").where(
                       ns_t.c.name == sa.bindparam("w_name"))), {"w_name": namespace}),
        (_prebuilt(conn, ("chain.instance", columns["instance"]), LockLevel.INSTANCE, in_t,
                   False, lambda: narrow(in_t, "instance").where(
                       in_t.c.instance_id == sa.bindparam("w_instance_id"))), on_instance),
        (_prebuilt(conn, ("chain.gate", columns["gate"]), LockLevel.GATE, g_t, False,
                   lambda: narrow(g_t, "gate").where(g_t.c.gate_id == gate_of_instance)),
         on_instance),
        (_prebuilt(conn, ("chain.steps", columns["steps"]), LockLevel.RECORDS, st_t, False,
                   lambda: narrow(st_t, "steps").where(
                       st_t.c.instance_id == sa.bindparam("w_instance_id")).order_by(
                       st_t.c.step_id)), on_instance),
    ]
    activation = _prebuilt(conn, ("chain.activation",), LockLevel.RECORDS, a_t, False,
                           lambda: sa.select(a_t).where(
                               a_t.c.activation_id == sa.bindparam("w_id")))
    task = _prebuilt(conn, ("chain.task",), LockLevel.RECORDS, weave_tasks, False,
                     lambda: _task_fenced_select(now_columns))
    activation_ids = sorted({act for act, _, _ in tasks})
    by_task = sorted({(task_id, attempt_id) for _, task_id, attempt_id in tasks})
    reads += [(activation, {"w_id": act}) for act in activation_ids]
    reads += [(task, {"task": task_id, "attempt": attempt_id}) for task_id, attempt_id in by_task]
    rows = _send(conn, reads)
    ns, instance, gate, steps = rows[:4]
    steps = sorted(steps, key=lambda step: str(step.step_id))  # a union part's ORDER BY
    # may be dropped by the server; the locks are taken in its index order all the same
    for one in (ns, instance, gate, *rows[4:]):
        if len(one) > 1:
            raise ValueError("a keyed lock of the step chain matched several rows")
    first = [one[0] if one else None for one in (ns, instance, gate)]
    acts = dict(zip(activation_ids, rows[4:4 + len(activation_ids)], strict=True))
    found = dict(zip(by_task, rows[4 + len(activation_ids):], strict=True))
    return (first[0], first[1], first[2], steps,
            [acts[act][0] if acts[act] else None for act, _, _ in tasks],
            [found[(t, a)][0] if found[(t, a)] else None for _, t, a in tasks])
