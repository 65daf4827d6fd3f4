"""T5: kill -9 a real ``weave serve`` at each labelled fault point, under load; restart it
on the same port; drain; ``weave check`` is clean and every outcome is recorded once.

The engine arms its kill point from ``WEAVE_FAULT_KILL`` (weave_core/foundation/faults.py) and dies
of SIGKILL at the point's N-th hit: no rollback, no clean shutdown. Workers (the SDK
Worker) and clients retry across the kill the way they must: the same report, the same
idempotency key, signal id and operation id. The short form runs in CI; the long form
(``-m slow``) puts more load in flight when the engine dies.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.cluster import Engines, Tenant, retrying, sdk_worker, wait_until
from weave_core.foundation.faults import POINTS
from weave_core.storage.db import Database
from weave_sdk import Client

HEARTBEAT = {"heartbeat": 2}  # a task claimed by a killed engine is dispatched again soon


def _task(step_id: str) -> dict[str, Any]:
    return {"id": step_id, "kind": "task", "queue": "q", "handler": {"name": "echo",
            "version": "1"}, "input": {"step": step_id}, "timeouts": HEARTBEAT}


def _definition(definition_id: str, steps: list[Any]) -> dict[str, Any]:
    return {"schema_version": 1, "definition_id": definition_id, "version": "1",
            "input_schema": {"type": "object"}, "failure_policy": "REVIEW", "steps": steps}


SEQ = _definition("seq", [_task("a"), _task("b"), _task("c")])
FAN = _definition("fan", [_task("a"), {"id": "fan", "kind": "parallel", "branches": {
    f"x{n}": [_task(f"x{n}")] for n in range(3)}}])
TIMER = _definition("timer", [{"id": "wait", "kind": "timer", "seconds": 1}, _task("a")])
SIGNAL = _definition("signal", [{"id": "go", "kind": "signal", "name": "go",
                                 "correlation_key": {"$ref": "input.job"}}, _task("a")])


@dataclass(frozen=True)
class Point:
    """A kill point, the definition that reaches it, the steps that succeed per instance
    (a signal or timer step succeeds too), and how to drive an instance through it."""

    name: str
    definition: dict[str, Any]
    steps: int
    nth: int


def _start_all(client: Client, definition_id: str, count: int) -> list[str]:
    keys = [f"k-{n}-{secrets.token_hex(3)}" for n in range(count)]
    return [retrying(lambda k=k: client.start(definition_id, {"job": k},
                                              idempotency_key=k)).workflow_id for k in keys]


def _signal_all(client: Client, ids: list[str]) -> None:
    for wid in ids:
        job = retrying(lambda w=wid: client.get_workflow_handle(w).describe()).input["job"]
        retrying(lambda w=wid, j=job: client.get_workflow_handle(w).signal(
            "go", correlation_key=j, signal_id=f"sig-{w}"))


def _pause_resume_all(client: Client, ids: list[str]) -> None:
    for wid in ids:
        retrying(lambda w=wid: client.get_workflow_handle(w).pause(reason="kill test",
                                                         operation_id=f"p-{w}"))
    for wid in ids:
        retrying(lambda w=wid: client.get_workflow_handle(w).resume(reason="kill test",
                                                          operation_id=f"r-{w}"))


def _echo(data: Any) -> Any:
    return data


Drive = Callable[[Client, list[str]], None] | None

CASES: dict[str, tuple[dict[str, Any], int, Drive, tuple[int, int]]] = {
    # point: (definition, steps per instance, what clients do, kill at hit (short, long));
    # the first claim is the only one the claim route answers with tasks when workers
    # get their next tasks with their reports (and its instances are started before the
    # worker: a start hands its first task to a parked long poll without a claim
    # transaction), and the first timers due are one batch
    "claim.after_commit": (SEQ, 3, None, (1, 1)),
    "advance.in_savepoint": (FAN, 5, None, (2, 12)),
    "step.before_commit": (SEQ, 3, None, (2, 12)),
    "step.after_commit": (SEQ, 3, None, (2, 12)),
    "tick.batch.mid": (TIMER, 2, None, (1, 1)),
    "signal.accept.mid": (SIGNAL, 2, _signal_all, (2, 12)),
    "control.mid": (SIGNAL, 2, lambda c, ids: (_pause_resume_all(c, ids), _signal_all(c, ids)),
                    (2, 12)),
}


def _kill_run(engines: Engines, db: Database, point: str, *, instances: int, long: bool
              ) -> str:
    definition, steps, drive, hits = CASES[point]
    nth = hits[long]
    tenant = Tenant.create(db, f"kill-{secrets.token_hex(4)}")
    port = engines.start(kill=f"{point}@{nth}")
    base = engines.url(port)
    client = tenant.client(base)
    retrying(lambda: client.publish(definition))
    early = point == "claim.after_commit"  # its tasks wait for the worker's first claim
    with engines.restarting(port) as deaths, ExitStack() as worker:
        if not early:
            worker.enter_context(sdk_worker(tenant, base, {"echo": _echo}))
        ids = _start_all(client, definition["definition_id"], instances)
        if early:
            worker.enter_context(sdk_worker(tenant, base, {"echo": _echo}))
        if drive is not None:
            drive(client, ids)
        wait_until(lambda: bool(deaths), f"the engine never reached {point}")
        if drive is not None:
            drive(client, ids)  # what the clients retry after the kill (idempotent ids)
        statuses = tenant.drain(instances)
    assert len(deaths) == 1 and f"killed at fault point {point}" in deaths[0], deaths
    assert set(statuses.values()) == {"SUCCEEDED"}, statuses
    assert len(statuses) == instances
    tenant.assert_exactly_once(steps)
    client.close()
    return deaths[0]


@pytest.mark.parametrize("point", POINTS)
def test_kill_9_at_a_labelled_point_loses_nothing_and_records_once(
    engines: Engines, own_db: Database, point: str
) -> None:
    _kill_run(engines, own_db, point, instances=6, long=False)


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
def test_kill_9_with_more_in_flight(engines: Engines, own_db: Database, point: str) -> None:
    _kill_run(engines, own_db, point, instances=40, long=True)


def test_every_kill_point_is_documented_and_tested() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text()
    assert [p for p in POINTS if f"| `{p}` |" not in doc] == []
    assert set(CASES) == set(POINTS)
