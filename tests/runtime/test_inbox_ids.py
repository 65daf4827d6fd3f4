"""Inbox ids on MariaDB come from the engine process's block of the ``weave_inbox_ids``
sequence (``storage/inbox_ids.py``), so a step's inbox INSERT goes with its COMMIT; the
rows' records (audit, history) name those ids; MySQL and SQLite number rows themselves."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from tests.runtime.helpers import (
    definition,
    inbox_of,
    instance,
    new_namespace,
    publish,
    rows,
    run_worker,
    start,
    task,
    transitions_of,
)
from weave_core.engine import Engine
from weave_core.storage import inbox_ids
from weave_core.storage.db import Database
from weave_core.storage.inbox_ids import next_inbox_id
from weave_core.storage.schema import weave_audit


def _run_seq(engine: Engine, *names: str) -> str:
    ns = new_namespace(engine)
    publish(engine, ns, definition("seq", [task(n) for n in names]))
    wid = start(engine, ns, "seq", {}).instance.instance_id
    assert run_worker(engine, ns, {n: {} for n in names}) == list(names)
    assert instance(engine, wid).status == "SUCCEEDED"
    return wid


def _sequence_next(engine: Engine) -> int:
    return int(engine.db.read(lambda conn: conn.execute(sa.text(
        "SELECT next_not_cached_value FROM weave_inbox_ids")).scalar_one()))


def _details(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else dict(json.loads(value))


def test_a_step_s_inbox_row_takes_the_next_id_of_the_process_block(engine: Engine) -> None:
    wid = _run_seq(engine, "a", "b", "c")
    ids = [row.id for row in inbox_of(engine, wid)]
    assert len(ids) == 3 and ids == sorted(ids) and len(set(ids)) == 3
    assert ids[-1] < _sequence_next(engine)  # numbered from blocks already taken
    # the records name the rows by these ids: the task's audit row and the consumption
    task_audit = rows(engine, weave_audit, weave_audit.c.object_type == "task",
                      weave_audit.c.action == "task.succeeded",
                      weave_audit.c.object_id.in_([r.source_task_id
                                                   for r in inbox_of(engine, wid)]))
    assert sorted(_details(r.metadata)["inbox_id"] for r in task_audit) == ids
    named = [_details(t.details).get("inbox_id") for t in transitions_of(engine, wid)
             if t.details is not None]
    assert set(ids) <= {n for n in named if n is not None}


def test_a_used_up_block_is_followed_by_the_next_one_from_the_sequence(
    engine: Engine,
) -> None:
    blocks = inbox_ids._blocks.of(engine.db.engine)
    with blocks.lock:
        blocks.ranges.clear()  # as if this process had numbered all it held
    upcoming = _sequence_next(engine)
    wid = _run_seq(engine, "a", "b")
    assert [row.id for row in inbox_of(engine, wid)] == [upcoming, upcoming + 1]
    assert blocks.ranges == [[upcoming + 2, upcoming + 100]]
    assert _sequence_next(engine) == upcoming + 100


def test_two_engine_processes_never_number_the_same_row(mysql_url: str) -> None:
    first, second = (Database.from_url(mysql_url, pool_size=1) for _ in range(2))
    try:
        taken: list[int] = []
        for _ in range(150):  # more than a block each, interleaved
            for db in (first, second):
                taken.append(db.transaction(lambda conn: next_inbox_id(conn) or 0, name="t"))
        assert 0 not in taken and len(set(taken)) == len(taken)
    finally:
        first.dispose()
        second.dispose()


def test_sqlite_numbers_its_rows_itself(sqlite_db: Database) -> None:
    assert sqlite_db.transaction(next_inbox_id, name="t") is None
