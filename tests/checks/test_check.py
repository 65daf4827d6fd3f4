"""``weave check``: each invariant's violation, seeded by direct SQL on a real database, is
reported; a database after real workflow runs is clean; the queries use their indexes."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection

from tests.runtime.helpers import (
    definition,
    new_namespace,
    publish,
    report,
    run_worker,
    start,
    task,
    work,
)
from weave_core.checks import run_check
from weave_core.dispatch.model import new_id
from weave_core.engine import Engine
from weave_core.storage.schema import (
    weave_activations,
    weave_audit,
    weave_inbox,
    weave_instances,
    weave_namespace_quotas,
    weave_operations,
    weave_pending_advances,
    weave_queues,
    weave_task_attempts,
    weave_task_events,
    weave_tasks,
    weave_transitions,
)
from weave_http.cli import main


@dataclass
class Scene:
    """One namespace: ``done`` ran a → b to the end, ``live`` has task a running."""

    ns: str
    done: str
    live: str


def _scene(engine: Engine) -> Scene:
    ns = new_namespace(engine)
    publish(engine, ns, definition("seq", [task("a"), task("b")]))
    done = start(engine, ns, "seq", {}).instance.instance_id
    assert run_worker(engine, ns, {"a": {"x": 1}, "b": {}}) == ["a", "b"]
    live = start(engine, ns, "seq", {}).instance.instance_id
    assert len(work(engine, ns, handlers=["a"])) == 1
    return Scene(ns, done, live)


def _one(conn: Connection, table: sa.Table, *where: Any) -> dict[str, Any]:
    return dict(conn.execute(sa.select(table).where(*where).limit(1)).mappings().one())


def _copy(conn: Connection, table: sa.Table, where: tuple[Any, ...], **changes: Any) -> None:
    row = _one(conn, table, *where)
    row.pop("id", None)  # an auto-increment key: the copy gets its own
    conn.execute(sa.insert(table), {**row, **changes})


def _task_of(conn: Connection, instance_id: str, step: str) -> dict[str, Any]:
    a, t = weave_activations, weave_tasks
    act = _one(conn, a, a.c.instance_id == instance_id, a.c.step_id == step)
    return _one(conn, t, t.c.owner_id == act["activation_id"])


def _operation(s: Scene, kind: str, instance_id: str) -> dict[str, Any]:
    return dict(namespace=s.ns, operation_id=new_id("op"), instance_id=instance_id, kind=kind,
                actor="token:test", reason="seeded", request_hash="0" * 64, outcome="{}",
                revision=1, created_at=datetime(2026, 1, 1))


def _recovery_twice(conn: Connection, s: Scene) -> None:
    op = _operation(s, "review.recover", s.done)
    conn.execute(sa.insert(weave_operations), op)
    tr = weave_transitions
    for revision in (101, 102):
        _copy(conn, tr, (tr.c.instance_id == s.done, tr.c.kind == "step.activated"),
              revision=revision, operation_id=op["operation_id"])


def _snapshot(conn: Connection, s: Scene) -> None:
    b = weave_inbox
    row = _one(conn, b, b.c.namespace == s.ns)
    conn.execute(sa.update(b).where(b.c.id == row["id"]).values(
        snapshot=row["snapshot"].replace('"revision":3', '"revision":4')))


def _stale_attempt(conn: Connection, s: Scene) -> None:
    t = _task_of(conn, s.done, "a")
    at = weave_task_attempts
    _copy(conn, at, (at.c.attempt_id == t["current_attempt_id"],),
          attempt_id=new_id("att"), attempt_no=2)


def _now(conn: Connection) -> Any:
    return conn.execute(sa.select(sa.func.utc_timestamp(6))).scalar_one()


i, a, t, b = weave_instances, weave_activations, weave_tasks, weave_inbox
tr, au, q, nq = weave_transitions, weave_audit, weave_queues, weave_namespace_quotas
ev, p = weave_task_events, weave_pending_advances

SEEDS: dict[str, tuple[str, Callable[[Connection, Scene], None]]] = {
    "instance_unexplained": ("I1", lambda c, s: c.execute(
        sa.update(i).where(i.c.instance_id == s.done).values(status="WAITING"))),
    "duplicate_task": ("I2", lambda c, s: _copy(
        c, t, (t.c.task_id == _task_of(c, s.done, "b")["task_id"],), task_id=new_id("tsk"))),
    "duplicate_activation": ("I2", lambda c, s: _copy(
        c, a, (a.c.instance_id == s.live, a.c.state == "ACTIVE"),
        activation_id=new_id("act"))),
    "recovery_activated_twice": ("I2", _recovery_twice),
    "duplicate_consumption": ("I3", lambda c, s: _copy(
        c, au, (au.c.namespace == s.ns, au.c.action == "workflow.result.consumed"))),
    "activation_settled_twice": ("I3", lambda c, s: _copy(
        c, tr, (tr.c.instance_id == s.done, tr.c.kind == "step.succeeded"), revision=99)),
    "snapshot_changed": ("I3", _snapshot),
    "transition_without_audit": ("I4", lambda c, s: c.execute(
        sa.update(tr).where(tr.c.instance_id == s.done, tr.c.revision == 2)
        .values(audit_id=987654321))),
    "history_gap": ("I4", lambda c, s: c.execute(
        sa.delete(tr).where(tr.c.instance_id == s.done, tr.c.revision == 2))),
    "task_event_gap": ("I4", lambda c, s: c.execute(
        sa.delete(ev).where(ev.c.task_id == _task_of(c, s.done, "a")["task_id"],
                            ev.c.revision == 2))),
    "operation_without_audit": ("I4", lambda c, s: c.execute(
        sa.insert(weave_operations), _operation(s, "pause", s.live))),
    "queue_counter": ("I5", lambda c, s: c.execute(
        sa.update(q).where(q.c.namespace == s.ns).values(outstanding=q.c.outstanding + 1))),
    "queue_over_capacity": ("I5", lambda c, s: c.execute(
        sa.update(q).where(q.c.namespace == s.ns).values(capacity=0))),
    "quota_counter": ("I5", lambda c, s: c.execute(
        sa.update(nq).where(nq.c.namespace == s.ns).values(outstanding=0))),
    "quota_exceeded": ("I5", lambda c, s: c.execute(
        sa.update(nq).where(nq.c.namespace == s.ns).values(task_quota=0))),
    "overdue_pending": ("I6", lambda c, s: c.execute(
        sa.update(p).where(p.c.instance_id == s.live)
        .values(due_at=_now(c) - timedelta(hours=1)))),
    "overdue_task": ("I6", lambda c, s: c.execute(
        sa.update(t).where(t.c.namespace == s.ns, t.c.status == "RUNNING")
        .values(timeout_at=_now(c) - timedelta(minutes=2)))),
    "superseded_attempt": ("I7", _stale_attempt),
}


@pytest.mark.parametrize("seeded", sorted(SEEDS))
def test_a_seeded_violation_is_reported(engine: Engine, seeded: str) -> None:
    scene = _scene(engine)
    other = _scene(engine)
    assert run_check(engine.db, namespaces=[scene.ns, other.ns]).ok
    invariant, seed = SEEDS[seeded]
    with engine.db.engine.begin() as conn:
        seed(conn, scene)
    found = run_check(engine.db, namespaces=[scene.ns, other.ns])
    code = "overdue" if seeded.startswith("overdue_") else seeded
    assert (invariant, code) in {(v.invariant, v.code) for v in found.violations}, found
    assert {v.namespace for v in found.violations} == {scene.ns}
    assert found.counts()[invariant] >= 1
    assert not run_check(engine.db, namespaces=[scene.ns], skip=["I1", "I2", "I3", "I4", "I5",
                                                                  "I6", "I7"]).violations
    assert run_check(engine.db, namespaces=[other.ns]).ok


def test_a_lowered_capacity_is_not_reported_as_exceeded(engine: Engine) -> None:
    from weave_core.dispatch import set_queue_capacity

    scene = _scene(engine)
    set_queue_capacity(engine.db, scene.ns, "q", 1, actor="test")
    start(engine, scene.ns, "seq", {})  # the queue is full: the start is deferred
    with engine.db.engine.begin() as conn:
        conn.execute(sa.update(q).where(q.c.namespace == scene.ns).values(capacity=0))
    assert run_check(engine.db, namespaces=[scene.ns]).ok


def _mixed(engine: Engine) -> str:
    """Sequences, a fan-out, a failure to review and a retry, all through the step path."""
    ns = new_namespace(engine)
    publish(engine, ns, definition("seq", [task("a"), task("b")]))
    publish(engine, ns, definition("fan", [task("a"), {
        "id": "fan", "kind": "parallel",
        "branches": {f"x{n}": [task(f"x{n}", "b")] for n in range(3)}}]))
    for _ in range(3):
        start(engine, ns, "seq", {})
        start(engine, ns, "fan", {})
    run_worker(engine, ns, {"a": {}, "b": {}})
    failing = start(engine, ns, "seq", {}).instance.instance_id
    (claimed,) = work(engine, ns, handlers=["a"])
    report(engine, ns, claimed, fail=True)
    assert failing
    return ns


def test_a_database_after_real_workflow_runs_is_clean(any_engine: Engine) -> None:
    ns = _mixed(any_engine)
    found = run_check(any_engine.db, namespaces=[ns])
    assert found.ok, [v.line() for v in found.violations]
    assert found.namespaces == [ns]


def test_the_check_queries_use_indexes(engine: Engine) -> None:
    """Every table a check reads is reached through an index (no full scan), MariaDB."""
    for _ in range(3):
        _scene(engine)
    ns = _mixed(engine)
    sent: list[tuple[str, Any]] = []

    def _record(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().startswith("SELECT") and "LIMIT" in statement:
            sent.append((statement, parameters))

    event.listen(engine.db.engine, "before_cursor_execute", _record)
    try:
        run_check(engine.db, namespaces=[ns])
    finally:
        event.remove(engine.db.engine, "before_cursor_execute", _record)
    assert len(sent) >= 15
    scans = []
    with engine.db.engine.connect() as conn:
        for statement, parameters in sent:
            cursor = conn.connection.cursor()
            cursor.execute("EXPLAIN " + statement, parameters)
            columns = [d[0] for d in cursor.description]
            for plan in (dict(zip(columns, r, strict=True)) for r in cursor.fetchall()):
                if plan["type"] == "ALL" and plan["table"] and plan["table"].startswith("weave_"):
                    scans.append((plan["table"], statement.split("FROM")[1][:80]))
    assert scans == []


def test_weave_check_exit_codes_and_json(engine: Engine, mysql_url: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    scene = _scene(engine)
    assert main(["check", "--database-url", mysql_url, "--namespace", scene.ns]) == 0
    assert "ok: no violation" in capsys.readouterr().out
    with engine.db.engine.begin() as conn:
        SEEDS["queue_counter"][1](conn, scene)
    assert main(["check", "--database-url", mysql_url, "--namespace", scene.ns,
                 "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] is False and document["counts"]["I5"] == 1
    (violation,) = document["violations"]
    assert (violation["code"], violation["object_id"]) == ("queue_counter", "q")
    assert main(["check", "--database-url", mysql_url, "--namespace", scene.ns]) == 1
    assert "I5 queue_counter" in capsys.readouterr().out
    assert main(["check", "--database-url", mysql_url, "--namespace", scene.ns,
                 "--skip", "I5"]) == 0


@pytest.mark.parametrize(("argv", "code"), [
    (["--database-url", "postgresql://db/x"], "invalid_database_url"),
    (["--database-url", "mysql+pymysql://root@127.0.0.1:1/none"], "database_unavailable"),
    (["--namespace", "no-such-namespace"], "not_found"),
    (["--skip", "I9"], "bad_request"),
])
def test_weave_check_refuses_with_one_error_line(
    mysql_url: str, capsys: pytest.CaptureFixture[str], argv: list[str], code: str
) -> None:
    full = ["check", *argv] if "--database-url" in argv else [
        "check", "--database-url", mysql_url, *argv]
    assert main(full) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error[{code}]: ") and err.count("\n") == 1, err


def test_weave_check_refuses_an_unmigrated_database(
    empty_mysql_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--database-url", empty_mysql_url]) == 1
    assert capsys.readouterr().err.startswith("error[database_not_migrated]: ")
