"""History retention (#12 item 8, R-11.1): ``weave export`` writes the complete record;
the tick purges settled instances older than the namespace's retention, in bounded batches,
with every row they own, never an unsettled one; the purge is counted. MariaDB and SQLite.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tests.http.conftest import Tenant, client_for
from tests.runtime.conftest import make_engine
from tests.runtime.helpers import definition, publish, run_worker, start, task
from weave_core.access.identity import create_namespace
from weave_core.engine import Engine
from weave_core.plugins.host import PluginHost
from weave_core.runtime import run_tick
from weave_core.runtime.retention import DEFAULT_RETENTION_DAYS, purge_expired
from weave_core.storage.db import Database, set_clock_offset
from weave_core.storage.schema import (
    weave_activations,
    weave_audit,
    weave_execution_gates,
    weave_idempotency,
    weave_inbox,
    weave_instances,
    weave_steps,
    weave_task_attempts,
    weave_task_events,
    weave_tasks,
    weave_transitions,
)
from weave_http.cli import build_parser, main
from weave_http.cli.export import _export
from weave_http.cli.workflows import run_command
from weave_sdk import Client

DAY_S = 86_400


@pytest.fixture(params=["mysql", "sqlite"])
def world(request: pytest.FixtureRequest, plugin_host: PluginHost) -> Iterator[
        tuple[str, Engine, Tenant]]:
    url: str = request.getfixturevalue(f"{request.param}_url")
    db: Database = request.getfixturevalue(f"{request.param}_db")
    engine = make_engine(db, plugin_host)
    tenant = Tenant(db, f"ret-{time.monotonic_ns() % 10**9}")
    create_namespace(db, tenant.namespace)
    try:
        yield url, engine, tenant
    finally:
        set_clock_offset(db, 0)


def _owned(engine: Engine, wid: str) -> dict[str, int]:
    """Rows anything of instance ``wid`` still owns, per table."""
    def _read(conn: sa.Connection) -> dict[str, int]:
        acts = list(conn.execute(sa.select(weave_activations.c.activation_id).where(
            weave_activations.c.instance_id == wid)).scalars())
        tasks = list(conn.execute(sa.select(weave_tasks.c.task_id).where(
            weave_tasks.c.owner_id.in_(acts or ["-"]))).scalars())
        gate = conn.execute(sa.select(weave_instances.c.gate_id).where(
            weave_instances.c.instance_id == wid)).scalar_one_or_none()
        checks: dict[str, tuple[sa.Table, Any]] = {
            "instances": (weave_instances, weave_instances.c.instance_id == wid),
            "steps": (weave_steps, weave_steps.c.instance_id == wid),
            "activations": (weave_activations, weave_activations.c.instance_id == wid),
            "transitions": (weave_transitions, weave_transitions.c.instance_id == wid),
            "idempotency": (weave_idempotency, weave_idempotency.c.instance_id == wid),
            "tasks": (weave_tasks, weave_tasks.c.task_id.in_(tasks or ["-"])),
            "attempts": (weave_task_attempts, weave_task_attempts.c.task_id.in_(tasks or ["-"])),
            "task_events": (weave_task_events, weave_task_events.c.task_id.in_(tasks or ["-"])),
            "inbox": (weave_inbox, weave_inbox.c.source_task_id.in_(tasks or ["-"])),
            "audit": (weave_audit, sa.and_(
                weave_audit.c.object_id.in_([wid, *tasks]),
                weave_audit.c.action != "workflow.purged")),
            "gates": (weave_execution_gates, weave_execution_gates.c.gate_id == (gate or "-")),
        }
        return {name: int(conn.execute(sa.select(sa.func.count()).select_from(table)
                                       .where(where)).scalar_one())
                for name, (table, where) in checks.items()}

    return engine.db.read(_read)


def _count_for(engine: Engine, table: sa.Table, column: Any, value: str) -> int:
    return int(engine.db.read(lambda c: c.execute(
        sa.select(sa.func.count()).select_from(table).where(column == value)).scalar_one()))


def test_export_then_purge_settled_instances_in_batches_never_unsettled(
    world: tuple[str, Engine, Tenant], tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    url, engine, tenant = world
    ns = tenant.namespace
    publish(engine, ns, definition("kept", [task("a"), task("b")]))
    settled = [start(engine, ns, "kept", {"n": n}).instance.instance_id for n in range(3)]
    run_worker(engine, ns, {"a": {"x": 1}, "b": {"y": 2}})
    running = start(engine, ns, "kept", {"n": 9}).instance.instance_id  # never worked on
    assert _owned(engine, settled[0])["attempts"] == 2

    http = client_for(engine)
    target = tmp_path / "record.json"
    with Client("http://testserver", tenant.token("read"), ns,
                transport=http._transport) as sdk:
        args = build_parser().parse_args(["export", settled[0], "--output", str(target)])
        out, err = io.StringIO(), io.StringIO()
        assert run_command(_export, args, client=sdk, out=out, err=err) == 0, err.getvalue()
    assert "2 tasks" in out.getvalue()
    record = json.loads(target.read_text())
    assert record["workflow"]["status"] == "SUCCEEDED"
    assert [len(t["attempts"]) for t in record["workflow"]["tasks"]] == [1, 1]
    assert record["history"][0]["revision"] == 1 and record["history"][-1]["audit"]
    assert set(record["task_event_log"]) == {t["task_id"] for t in record["workflow"]["tasks"]}
    assert all(any(e["event_type"] == "task.succeeded" for e in events)
               for events in record["task_event_log"].values())

    assert main(["namespace", "retention", ns, "--database-url", url]) == 0
    assert f"kept {DEFAULT_RETENTION_DAYS} days (the default); 0 purged" in \
        capsys.readouterr().out
    assert main(["namespace", "retention", ns, "--days", "1", "--database-url", url]) == 0
    assert "kept 1 days; 0 purged so far" in capsys.readouterr().out

    gates = engine.db.read(lambda c: list(c.execute(sa.select(weave_instances.c.gate_id).where(
        weave_instances.c.instance_id.in_(settled))).scalars()))
    assert len(gates) == 3
    assert purge_expired(engine).count == 0  # not yet a day old
    set_clock_offset(engine.db, 2 * DAY_S)
    first = purge_expired(engine, batch=1)
    assert first.purged == {ns: [settled[0]]}  # the oldest settled first, one per batch
    report = run_tick(engine)  # the tick's pass (its first for this engine): the rest
    assert report.outcomes.get("instances_purged") == 2

    for wid in settled:
        assert set(_owned(engine, wid).values()) == {0}, _owned(engine, wid)
        assert _count_for(engine, weave_audit, weave_audit.c.object_id, wid) == 1  # the purge
    assert [_count_for(engine, weave_execution_gates, weave_execution_gates.c.gate_id, g)
            for g in gates] == [0, 0, 0]
    kept = _owned(engine, running)
    assert kept["instances"] == 1 and kept["steps"] >= 1 and kept["tasks"] == 1
    read = tenant.headers("read")
    assert http.get(f"/v1/namespaces/{ns}/workflows/{settled[0]}",
                    headers=read).status_code == 404
    assert http.get(f"/v1/namespaces/{ns}/workflows/{running}",
                    headers=read).json()["status"] == "RUNNING"

    assert main(["namespace", "retention", ns, "--database-url", url]) == 0
    assert "3 purged so far" in capsys.readouterr().out
    assert main(["namespace", "retention", ns, "--days", "0", "--database-url", url]) == 1
    assert capsys.readouterr().err.startswith("error[validation_failed]: ")
