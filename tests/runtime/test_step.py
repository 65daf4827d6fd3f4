"""The step transaction (``weave_core.runtime.step``): a worker's result settled, consumed
and the next task claimed in one transaction, with the outcomes of the classic path."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pymysql
import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY
from sqlalchemy import event

from tests.conftest import _server_params
from tests.round_trips import RoundTrips
from tests.runtime.helpers import (
    definition,
    inbox_of,
    instance,
    new_namespace,
    publish,
    rows,
    start,
    task,
    tasks_of,
    work,
)
from weave_core.dispatch import (
    HandlerRef,
    Report,
    ReportOutcome,
    TaskError,
    set_namespace_quota,
    set_queue_capacity,
)
from weave_core.dispatch.errors import ReportConflictError
from weave_core.dispatch.model import ClaimedTask
from weave_core.dispatch.queues import get_queue, get_quota
from weave_core.engine import Engine
from weave_core.foundation.faults import armed
from weave_core.runtime import run_tick
from weave_core.runtime.step import ClaimNext, StepDone, complete_step
from weave_core.storage.db import set_clock_offset
from weave_core.storage.locks import (
    lock_activation,
    lock_chain_of_tasks_at_once,
    lock_gate,
    lock_instance,
    lock_namespace_shared,
    lock_steps,
    lock_task_fenced,
    observing_locks,
)
from weave_core.storage.schema import weave_instances, weave_tasks


def _ok(output: Any = None) -> Report:
    return Report(ReportOutcome.SUCCEEDED, output=output if output is not None else {})


def _step(engine: Engine, ns: str, claimed: ClaimedTask, report: Report | None = None, *,
          handlers: tuple[str, ...] = ("a", "b", "c"), max_tasks: int = 1) -> StepDone:
    return complete_step(
        engine, namespace=ns, task_id=claimed.task_id, attempt_id=claimed.attempt_id,
        report=report or _ok(), actor="worker:test",
        claim_next=ClaimNext("w1", [HandlerRef(h, "1") for h in handlers], max_tasks))


def _seq(engine: Engine, *names: str) -> tuple[str, str]:
    ns = new_namespace(engine)
    publish(engine, ns, definition("seq", [task(n) for n in names]))
    return ns, start(engine, ns, "seq", {}).instance.instance_id


class Statements:
    """Every statement and commit the engine sends while recording."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.on = False

    def statements(self) -> list[str]:
        return [s for s in self.log if s != "COMMIT" and not s.startswith("BEGIN")]


@pytest.fixture
def statements(any_engine: Engine) -> Iterator[Statements]:
    rec = Statements()

    def _before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if rec.on:
            rec.log.append(statement)

    def _commit(conn: Any) -> None:
        if rec.on:
            rec.log.append("COMMIT")

    sa_engine = any_engine.db.engine
    event.listen(sa_engine, "before_cursor_execute", _before)
    event.listen(sa_engine, "commit", _commit)
    yield rec
    event.remove(sa_engine, "before_cursor_execute", _before)
    event.remove(sa_engine, "commit", _commit)


def test_a_step_is_one_transaction_that_hands_back_the_successor(
    any_engine: Engine, statements: Statements, round_trips: RoundTrips
) -> None:
    engine = any_engine
    ns, wid = _seq(engine, "a", "b", "c")
    (a,) = work(engine, ns, handlers=["a"])
    first = _step(engine, ns, a, _ok({"n": 1}))
    assert first.one_transaction and first.completion.task.status.value == "SUCCEEDED"
    assert first.consumed is not None and first.consumed.outcome.value == "consumed"
    (b,) = first.next_tasks
    assert b.handler == "b" and b.attempt_no == 1
    statements.on = True  # b was handed out here: its report needs no read to find its chain
    sent_before = round_trips.count
    second = _step(engine, ns, b)
    trips = round_trips.count - sent_before
    statements.on = False
    (c,) = second.next_tasks
    assert c.handler == "c" and second.one_transaction
    assert statements.log.count("COMMIT") == 1
    sent = statements.statements()
    # SQLite sends a multi-row INSERT … RETURNING as one statement per row: one more
    assert len(sent) <= (20 if engine.db.dialect == "mysql" else 21), \
        "\n".join(s.split("\n")[0] for s in sent)
    if engine.db.dialect == "mysql":  # the closing writes go together (weave_core.storage.deferred)
        assert trips <= 2, f"{trips} round trips"  # the locking read; the writes with the COMMIT
    if engine.db.dialect == "mysql":  # consumed before its INSERT went: written once
        assert not [s for s in sent if s.startswith("UPDATE weave_inbox")], sent
    # the release and the successor's reservation net to nothing: no capacity row touched
    assert not [s for s in sent if "weave_namespace_quotas" in s or "weave_queues" in s]
    assert {row.state for row in inbox_of(engine, wid)} == {"PROCESSED"}
    assert all(row.snapshot for row in inbox_of(engine, wid))  # the record and its dedup key
    assert instance(engine, wid).status == "RUNNING"
    # every transition names its transaction's workflow audit row (on MariaDB through
    # LAST_INSERT_ID(), storage/fused.py), and the task's audit row comes before it
    links = engine.db.read(lambda conn: conn.execute(sa.text(
        "SELECT t.revision, a.object_type, a.object_id, a.operation_id = t.operation_id "
        "FROM weave_transitions t LEFT JOIN weave_audit a ON a.id = t.audit_id "
        "WHERE t.instance_id = :wid ORDER BY t.revision"), {"wid": wid}).all())
    assert links and all(
        (kind, obj, same) == ("workflow", wid, 1) for _, kind, obj, same in links), links
    consumed = engine.db.read(lambda conn: conn.execute(sa.text(
        "SELECT action FROM weave_audit WHERE namespace = :ns ORDER BY id"),
        {"ns": ns}).scalars().all())
    assert consumed[-2:] == ["task.succeeded", "workflow.result.consumed"], consumed


def test_a_workflow_runs_to_the_end_on_steps_and_gives_every_unit_back(
    any_engine: Engine,
) -> None:
    engine = any_engine
    ns, wid = _seq(engine, "a", "b", "c")
    (claimed,) = work(engine, ns, handlers=["a"])
    handled = []
    following: list[ClaimedTask] = [claimed]
    while following:
        (current,) = following
        handled.append(current.handler)
        following = _step(engine, ns, current).next_tasks
    assert handled == ["a", "b", "c"]
    assert instance(engine, wid).status == "SUCCEEDED"
    assert {t.status for t in tasks_of(engine, wid)} == {"SUCCEEDED"}
    assert {r.state for r in inbox_of(engine, wid)} == {"PROCESSED"}
    quota = engine.db.read(lambda c: get_quota(c, ns))
    queue = engine.db.read(lambda c: get_queue(c, ns, "q"))
    assert (quota.outstanding, queue.outstanding) == (0, 0)


def _fan(engine: Engine, branches: int) -> tuple[str, str]:
    """Task ``a``, then a parallel of ``branches`` tasks of handler ``b``: started."""
    ns = new_namespace(engine)
    publish(engine, ns, definition("fan", [
        task("a"),
        {"id": "fan", "kind": "parallel",
         "branches": {f"x{i}": [task(f"x{i}", "b")] for i in range(branches)}},
    ]))
    return ns, start(engine, ns, "fan", {}).instance.instance_id


def test_a_fan_out_re_runs_in_order_and_reserves_every_branch(any_engine: Engine) -> None:
    engine = any_engine
    ns, wid = _fan(engine, 3)
    (a,) = work(engine, ns, handlers=["a"])
    done = _step(engine, ns, a, max_tasks=2)
    assert done.one_transaction and len(done.next_tasks) == 2
    assert len([t for t in tasks_of(engine, wid) if t.status != "SUCCEEDED"]) == 3
    quota = engine.db.read(lambda c: get_quota(c, ns))
    assert quota.outstanding == 3


def test_a_full_queue_in_a_step_defers_the_successor(any_engine: Engine) -> None:
    engine = any_engine
    ns, wid = _fan(engine, 2)
    set_queue_capacity(engine.db, ns, "q", 1, actor="test")
    (a,) = work(engine, ns, handlers=["a"])
    done = _step(engine, ns, a)
    assert done.next_tasks == [] and done.completion.task.status.value == "SUCCEEDED"
    assert [t.status for t in tasks_of(engine, wid)] == ["SUCCEEDED"]
    assert instance(engine, wid).status == "WAITING"
    assert engine.db.read(lambda c: get_queue(c, ns, "q")).outstanding == 0


def _last_step_while_held(engine: Engine, statement: str) -> tuple[str, str, StepDone, float]:
    """Run the last step of a one-step sequence while another connection holds what
    ``statement`` (a locking read, given the namespace) locks for half a second."""
    ns, wid = _seq(engine, "a")
    (a,) = work(engine, ns, handlers=["a"])
    url = sa.make_url(engine.db.url)
    holder = pymysql.connect(**_server_params(), database=url.database)  # type: ignore[call-overload]
    held = threading.Event()

    def _hold() -> None:
        with holder.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute(statement, (ns,))
            held.set()
            time.sleep(0.5)
        holder.commit()

    thread = threading.Thread(target=_hold)
    thread.start()
    held.wait(5)
    began = time.monotonic()
    done = _step(engine, ns, a)
    waited = time.monotonic() - began
    thread.join()
    holder.close()
    return ns, wid, done, waited


def _reruns() -> float:
    """Steps run again with the capacity locks in order (``weave_capacity_reruns_total``)."""
    return REGISTRY.get_sample_value("weave_capacity_reruns_total",
                                     {"transaction": "step"}) or 0.0


def _quota_rows(engine: Engine, ns: str) -> tuple[int, int]:
    """The quota row's ``outstanding`` and what its release shards hold."""
    row = engine.db.read(lambda c: c.execute(sa.text(
        "SELECT (SELECT outstanding FROM weave_namespace_quotas WHERE namespace = :ns), "
        "(SELECT SUM(released) FROM weave_capacity_releases WHERE namespace = :ns "
        "AND counter = '')"), {"ns": ns}).one())
    return int(row[0]), int(row[1])


def test_the_last_step_gives_its_unit_back_without_waiting_for_a_busy_counter_row(
    engine: Engine,
) -> None:
    """The net release goes into a release shard: a transaction holding the quota and
    queue rows (a start, say) does not hold it up, and the counts read right after."""
    before = _reruns()
    ns, wid, done, waited = _last_step_while_held(
        engine, "SELECT q.outstanding, u.outstanding FROM weave_namespace_quotas q "
        "JOIN weave_queues u ON u.namespace = q.namespace WHERE q.namespace = %s FOR UPDATE")
    assert done.one_transaction and waited < 0.3
    assert instance(engine, wid).status == "SUCCEEDED"
    assert _quota_rows(engine, ns) == (1, 1)  # the row untouched, one unit in a shard
    assert _reruns() == before  # the step was not run again
    assert engine.db.read(lambda c: get_quota(c, ns)).outstanding == 0
    assert engine.db.read(lambda c: get_queue(c, ns, "q")).outstanding == 0


def test_with_every_release_shard_busy_the_last_step_gives_back_through_the_row(
    engine: Engine,
) -> None:
    """No shard free: the step re-runs with the counter locks taken in order and gives
    the unit back through the quota row itself; the shards were never waited for."""
    before = _reruns()
    ns, wid, done, waited = _last_step_while_held(
        engine, "SELECT released FROM weave_capacity_releases WHERE namespace = %s "
        "AND counter = '' FOR UPDATE")
    assert done.one_transaction and waited < 0.3
    assert instance(engine, wid).status == "SUCCEEDED"
    assert _quota_rows(engine, ns) == (0, 0)
    assert _reruns() == before + 1  # counted for operators
    assert engine.db.read(lambda c: get_quota(c, ns)).outstanding == 0


def test_a_quarantined_result_commits_the_settled_task_with_it(engine: Engine) -> None:
    ns, wid = _seq(engine, "a", "b")
    (a,) = work(engine, ns, handlers=["a"])
    i = weave_instances
    with engine.db.engine.begin() as conn:  # a contradiction: the instance names another gate
        conn.execute(sa.update(i).where(i.c.instance_id == wid).values(gate_id="gate_other"))
    done = _step(engine, ns, a)
    assert done.one_transaction and done.next_tasks == []
    assert done.consumed is not None
    assert (done.consumed.outcome.value, done.consumed.code) == ("quarantined", "gate_mismatch")
    assert done.completion.task.status.value == "SUCCEEDED"
    (row,) = inbox_of(engine, wid)
    assert (row.state, row.error_code) == ("QUARANTINED", "gate_mismatch")
    assert [t.status for t in tasks_of(engine, wid)] == ["SUCCEEDED"]
    assert instance(engine, wid).status == "NEEDS_REVIEW"


def test_a_failing_consumption_commits_the_report_and_leaves_the_row_to_the_tick(
    any_engine: Engine,
) -> None:
    engine = any_engine
    ns, wid = _seq(engine, "a", "b")
    (a,) = work(engine, ns, handlers=["a"])
    with armed("runtime.consume.before_ack"):
        done = _step(engine, ns, a)
    assert not done.one_transaction and done.next_tasks == []
    assert done.completion.task.status.value == "SUCCEEDED"
    (row,) = inbox_of(engine, wid)
    assert row.state == "PENDING" and row.row_version == 2  # deferred by the consumer
    assert [t.status for t in tasks_of(engine, wid)] == ["SUCCEEDED"]


def test_replays_conflicts_and_retries_keep_their_answers(any_engine: Engine) -> None:
    engine = any_engine
    ns, wid = _seq(engine, "a", "b")
    (a,) = work(engine, ns, handlers=["a"])
    retry = Report(ReportOutcome.FAILED, error=TaskError("flaky", "try again", True))
    done = _step(engine, ns, a, retry)
    assert not done.one_transaction and done.completion.task.status.value == "PENDING"
    set_clock_offset(engine.db, 120)  # past the retry's backoff
    try:
        (again,) = work(engine, ns, handlers=["a"])
    finally:
        set_clock_offset(engine.db, 0)
    first = _step(engine, ns, again, _ok({"v": 1}))
    assert first.one_transaction
    replay = _step(engine, ns, again, _ok({"v": 1}))
    assert replay.completion.replay and replay.next_tasks == []
    with pytest.raises(ReportConflictError):
        _step(engine, ns, again, _ok({"v": 2}))
    assert len([t for t in tasks_of(engine, wid) if t.status == "RUNNING"]) == 1


def test_claim_next_hands_out_only_the_handlers_the_worker_serves(any_engine: Engine) -> None:
    engine = any_engine
    ns, wid = _seq(engine, "a", "b")
    (a,) = work(engine, ns, handlers=["a"])
    done = _step(engine, ns, a, handlers=("a",))
    assert done.one_transaction and done.next_tasks == []
    assert [t.status for t in tasks_of(engine, wid)] == ["SUCCEEDED", "PENDING"]


def test_concurrent_steps_never_exceed_capacity_and_counters_stay_exact(
    engine: Engine,
) -> None:
    """I5 under concurrency: four workers step eight seq3 instances through a queue of
    capacity 3 and a quota of 5, each from its own connection, while starts that find the
    queue full wait for the tick; a monitor reads the counters (rows less release shards)
    and the open tasks in one snapshot throughout: never over the limits, always equal to
    the tasks they count."""
    ns = new_namespace(engine)
    publish(engine, ns, definition("seq", [task(n) for n in ("a", "b", "c")]))
    set_queue_capacity(engine.db, ns, "q", 3, actor="test")
    set_namespace_quota(engine.db, ns, 5, actor="test")
    wids = [start(engine, ns, "seq", {}).instance.instance_id for _ in range(8)]
    stop = threading.Event()
    seen: list[tuple[int, int, int]] = []
    errors: list[BaseException] = []

    def _counters(conn: Any) -> tuple[int, int, int]:
        # one statement, so one snapshot (the engine reads at READ COMMITTED); a counter
        # is its row less what its release shards hold
        row = conn.execute(sa.text(
            "SELECT (SELECT outstanding FROM weave_queues WHERE namespace = :ns "
            "AND name = 'q') - (SELECT SUM(released) FROM weave_capacity_releases "
            "WHERE namespace = :ns AND counter = 'q'), (SELECT outstanding FROM "
            "weave_namespace_quotas WHERE namespace = :ns) - (SELECT SUM(released) FROM "
            "weave_capacity_releases WHERE namespace = :ns AND counter = ''), "
            "(SELECT COUNT(*) FROM weave_tasks WHERE namespace = :ns "
            "AND status IN ('PENDING', 'RUNNING'))"), {"ns": ns}).one()
        return int(row[0]), int(row[1]), int(row[2])

    def _monitor() -> None:
        while not stop.is_set():
            seen.append(engine.db.read(_counters))
            time.sleep(0.002)

    def _worker() -> None:
        try:
            while not stop.is_set():
                claimed = work(engine, ns, handlers=["a", "b", "c"], max_tasks=1)
                if not claimed:
                    run_tick(engine)
                    time.sleep(0.005)
                while claimed:
                    claimed = _step(engine, ns, claimed[0]).next_tasks
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=_monitor)]
    threads += [threading.Thread(target=_worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    offset = 0
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not errors:
            if {instance(engine, w).status for w in wids} == {"SUCCEEDED"}:
                break
            if engine.db.read(_counters)[2] == 0:  # all idle: the deferred starts are due
                offset += 35
                set_clock_offset(engine.db, offset)
            time.sleep(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
        set_clock_offset(engine.db, 0)
    assert errors == []
    assert {instance(engine, w).status for w in wids} == {"SUCCEEDED"}
    assert len(seen) > 20
    assert max(queue for queue, _, _ in seen) <= 3
    assert max(quota for _, quota, _ in seen) <= 5
    assert [c for c in seen if not c[0] == c[1] == c[2]] == []
    assert engine.db.read(_counters) == (0, 0, 0)
    shards = engine.db.read(lambda c: c.execute(sa.text(
        "SELECT SUM(released) FROM weave_capacity_releases WHERE namespace = :ns"),
        {"ns": ns}).scalar_one())
    assert shards > 0  # the last steps gave back through release shards, concurrently


@pytest.mark.parametrize("point", ["settle", "inbox", "successor", "commit"])
def test_kill_9_inside_the_step_records_nothing_and_the_report_again_records_once(
    engine: Engine, mysql_url: str, point: str
) -> None:
    """kill -9 at a labelled point of the step transaction: nothing of it is recorded (no
    settled task, no inbox row, no successor); the worker's report, sent again to a live
    engine, is taken once and the instance runs on without a duplicate."""
    ns, wid = _seq(engine, "a", "b")
    (a,) = work(engine, ns, handlers=["a"])
    killed = subprocess.run(
        [sys.executable, "-m", "tests.runtime.step_process", mysql_url, ns, a.task_id,
         a.attempt_id, point], capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert [t.status for t in tasks_of(engine, wid)] == ["RUNNING"]
    assert inbox_of(engine, wid) == []
    again = _step(engine, ns, a, _ok({"killed": point}))
    assert again.one_transaction and not again.completion.replay
    (b,) = again.next_tasks
    assert _step(engine, ns, b).next_tasks == []
    assert instance(engine, wid).status == "SUCCEEDED"
    assert [t.status for t in tasks_of(engine, wid)] == ["SUCCEEDED", "SUCCEEDED"]
    assert [r.state for r in inbox_of(engine, wid)] == ["PROCESSED", "PROCESSED"]


def test_the_chain_read_at_once_brings_what_the_locks_one_by_one_bring(
    engine: Engine,
) -> None:
    """The six reads of ``locks.lock_chain_of_tasks_at_once`` pack each row into one JSON_ARRAY; the
    values must come back exactly as separate columns bring them (texts with quotes and
    non-ASCII, NULLs, booleans, microsecond times), in the same lock order."""
    ns, wid = _seq(engine, "a", "b")
    (a,) = work(engine, ns, handlers=["a"])
    columns = {"namespace": ("name", "disabled"),
               "instance": ("instance_id", "namespace", "input", "paused", "deadline_at",
                            "review_reason", "revision", "gate_id"),
               "gate": ("gate_id", "is_open"),
               "steps": ("step_id", "phase", "version", "output", "activation_id")}
    owner = rows(engine, weave_tasks, weave_tasks.c.task_id == a.task_id)[0].owner_id
    quoted = 'say "hé" \\ \u2603'
    engine.db.transaction(lambda conn: conn.execute(
        sa.update(weave_instances).where(weave_instances.c.instance_id == wid)
        .values(review_reason=quoted)), name="t")

    def _both(conn: Any) -> tuple[Any, Any]:
        levels: list[tuple[int, str]] = []
        with observing_locks(conn, lambda level, table, shared: levels.append(
                (int(level), table))):
            ns_row, inst, gate, steps_now, acts, tasks = lock_chain_of_tasks_at_once(
                conn, namespace=ns, instance_id=wid, tasks=[(owner, a.task_id, a.attempt_id)],
                now_columns=engine.db.now_columns, columns=columns)
            at_once = (ns_row, inst, gate, steps_now, acts[0], tasks[0])
        one_by_one = (
            lock_namespace_shared(conn, ns, columns=columns["namespace"]),
            lock_instance(conn, wid, columns=columns["instance"]),
            lock_gate(conn, at_once[1].gate_id, columns=columns["gate"]),
            list(lock_steps(conn, wid, columns=columns["steps"])),
            lock_activation(conn, owner),
            lock_task_fenced(conn, a.task_id, a.attempt_id, engine.db.now_columns),
        )
        return (at_once, levels), one_by_one

    (at_once, levels), one_by_one = engine.db.transaction(_both, name="t")
    assert [level for level, _ in levels] == sorted(level for level, _ in levels)
    assert [t for _, t in levels] == ["weave_namespaces", "weave_instances",
                                      "weave_execution_gates", "weave_steps",
                                      "weave_activations", "weave_tasks"]
    ns_row, inst, gate, steps_now, act, task_row = at_once
    assert inst.review_reason == quoted and inst.paused is False and gate.is_open is True
    flags = ("disabled", "paused", "is_open")
    for packed, plain in [(ns_row, one_by_one[0]), (inst, one_by_one[1]),
                          (gate, one_by_one[2]), (act, one_by_one[4])]:
        assert packed._fields == tuple(plain._mapping.keys())
        assert tuple(packed) == tuple(bool(v) if k in flags else v
                                      for k, v in plain._mapping.items())
    assert [tuple(s) for s in steps_now] == [tuple(s) for s in one_by_one[3]]
    plain_task = one_by_one[5]._mapping
    for field in task_row._fields[:-2]:  # the last two: database time, read twice
        assert getattr(task_row, field) == plain_task[field], field
    assert task_row.idempotent is bool(plain_task["idempotent"])
    assert engine.db.now_of(task_row) <= engine.db.now_of(one_by_one[5])
