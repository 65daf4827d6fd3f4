"""The one lock order (R-6.2), and the only package that issues locking reads.

Every transaction that takes row locks takes them in this order, and only downwards:

1. ``identity``         the namespace row, **shared** (every operation in the namespace);
2. ``namespace_quota``  the namespace's quota/usage row, exclusive;
3. ``queues``           the queues the pinned definition version uses, exclusive, in
                        sorted queue-name order;
4. ``instance``         the workflow instance row, exclusive;
5. ``gate``             the instance's execution gate, exclusive;
6. ``records``          activations/steps and consumption records, exclusive, in id order.

A transaction may skip levels, but never locks a level above one it already holds (and
never holds an inbox row lock and then locks back up this chain). Two transactions that
follow one order cannot deadlock on these rows; any deadlock left (gap locks, secondary
indexes) is retried whole by ``Database.transaction``.

A tick batch (several instances of one namespace in one transaction) takes the order
across the batch: levels 1 to 3 once, then every instance row in id order, every gate in id
order, every instance's steps; only then each instance's own level-6 records, instance by
instance in id order. Every other transaction holds at most one instance, so it waits for
the batch at the first instance row they share and never holds a row the batch still needs.

Why a package of its own: a locking read anywhere else is a review finding. Everything that
locks goes through :func:`lock_rows` / :func:`lock_one` (``order``) or a named function
built on them (``chain``: levels 1-5; ``records``: level 6; ``at_once``: a step's six locks
in one round trip), each tagged with its :class:`LockLevel`, so a test can record the
levels a transaction visits and assert they never go back up (the T1 test family).

Adding a lock: write ``lock_<thing>(conn, ...)`` in the module of its level, on top of
:func:`lock_rows` with the right :class:`LockLevel`; give the query an index that serves
it (a locking read locks every row it scans); add the table to the level's ``tables`` in
:data:`LOCK_ORDER`; take several rows of one level in a sorted order.

Dialects: MariaDB/MySQL use ``FOR UPDATE`` and ``LOCK IN SHARE MODE`` (MariaDB has no
``FOR SHARE``; SQLAlchemy picks the right spelling). SQLite has no row locks: the same
functions issue plain SELECTs, which is safe because every write transaction there starts
with ``BEGIN IMMEDIATE`` and so holds the database write lock already.
"""

from weave_core.storage.locks.at_once import (
    lock_admission_at_once,
    lock_chain_of_tasks_at_once,
)
from weave_core.storage.locks.chain import (
    lock_gate,
    lock_gates,
    lock_instance,
    lock_instances,
    lock_namespace_exclusive,
    lock_namespace_quota,
    lock_namespace_shared,
    lock_queues,
    lock_steps,
    lock_steps_of,
)
from weave_core.storage.locks.order import (
    LOCK_ORDER,
    LockLevel,
    LockObserver,
    LockStep,
    holding,
    lock_one,
    lock_rows,
    observing_locks,
)
from weave_core.storage.locks.records import (
    CLAIM_COLUMNS,
    lock_activation,
    lock_activations,
    lock_bound_signals,
    lock_claimable_tasks,
    lock_gate_tasks,
    lock_inbox_row,
    lock_matching_signal,
    lock_open_waits,
    lock_pending_advance,
    lock_pending_advances,
    lock_poll_round,
    lock_signal,
    lock_task,
    lock_task_fenced,
    lock_wait,
    lock_waits,
)

__all__ = [
    "CLAIM_COLUMNS",
    "LOCK_ORDER",
    "LockLevel",
    "LockObserver",
    "LockStep",
    "holding",
    "lock_activation",
    "lock_activations",
    "lock_admission_at_once",
    "lock_chain_of_tasks_at_once",
    "lock_claimable_tasks",
    "lock_gate",
    "lock_gate_tasks",
    "lock_gates",
    "lock_inbox_row",
    "lock_instance",
    "lock_instances",
    "lock_namespace_exclusive",
    "lock_namespace_quota",
    "lock_namespace_shared",
    "lock_one",
    "lock_pending_advance",
    "lock_pending_advances",
    "lock_queues",
    "lock_rows",
    "lock_steps",
    "lock_steps_of",
    "lock_task",
    "lock_task_fenced",
    "observing_locks",
]

__all__ += [
    "lock_bound_signals",
    "lock_matching_signal",
    "lock_open_waits",
    "lock_poll_round",
    "lock_signal",
    "lock_wait",
    "lock_waits",
]
