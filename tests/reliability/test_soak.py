"""T14, the soak: several engine processes on one database, workers that crash, stall,
report twice and come back late, random kill -9 of engines, sustained starts with signals,
timers and polls. At the end nothing is lost, every instance succeeded once, ``weave
check`` is clean, and the engines' memory and the database connections stayed flat.

``WEAVE_SOAK_SECONDS`` sets the load's duration of the slow soak (default 600):
``pytest -m slow tests/reliability/test_soak.py``. CI runs the same soak for 60 s
(``test_soak_short``). The figures are printed (``-s``) and kept as the test's
``record_property`` values.
"""

from __future__ import annotations

import os
import random
import secrets
import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
import sqlalchemy as sa

from tests.reliability.chaos import LEASE_S, ChaosWorker
from tests.reliability.cluster import Engines, Tenant, retrying, sdk_worker
from weave_core.storage.db import Database

RETRY = {"max_attempts": 50, "backoff_seconds": 1, "max_backoff_seconds": 2}
TIMEOUTS = {"heartbeat": LEASE_S}


def _task(step_id: str) -> dict[str, Any]:
    return {"id": step_id, "kind": "task", "queue": "q", "handler": {"name": "echo",
            "version": "1"}, "input": {"step": step_id}, "retry": RETRY,
            "timeouts": TIMEOUTS}


def _definition(definition_id: str, steps: list[Any]) -> dict[str, Any]:
    return {"schema_version": 1, "definition_id": definition_id, "version": "1",
            "input_schema": {"type": "object"}, "failure_policy": "REVIEW", "steps": steps}


DEFINITIONS = {
    "seq": (_definition("seq", [_task("a"), _task("b"), _task("c")]), 3),
    "fan": (_definition("fan", [_task("a"), {"id": "fan", "kind": "parallel", "branches": {
        f"x{n}": [_task(f"x{n}")] for n in range(3)}}]), 5),
    "timer": (_definition("timer", [{"id": "wait", "kind": "timer", "seconds": 1},
                                    _task("a")]), 2),
    "signal": (_definition("signal", [{"id": "go", "kind": "signal", "name": "go",
                                       "correlation_key": {"$ref": "input.job"}},
                                      _task("a")]), 2),
    "poll": (_definition("poll", [{
        "id": "outcome", "kind": "poll", "queue": "q",
        "handler": {"name": "job_status", "version": "1"},
        "input": {"job_id": {"$ref": "input.job"}}, "max_rounds": 20, "interval_seconds": 1,
        "deadline_seconds": 3600, "attempts_per_round": 20,
        "classify": {"field": "status", "pending": ["RUNNING"], "succeeded": ["DONE"],
                     "failed": ["REJECTED"]}}, _task("a")]), 2),
}


def _echo(data: Any, rng: random.Random | None = None) -> Any:
    return data


def _job_status(data: Any, rng: random.Random | None = None) -> dict[str, str]:
    return {"status": "DONE" if (rng or random).random() < 0.6 else "RUNNING"}


HANDLERS = {"echo": _echo, "job_status": _job_status}


@dataclass
class Samples:
    rss_kib: list[int] = field(default_factory=list)
    connections: list[int] = field(default_factory=list)


def _connections(db: Database) -> int:
    name = db.engine.url.database
    return int(db.read(lambda c: c.execute(sa.text(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = :db"),
        {"db": name}).scalar_one()))


def _soak(engines: Engines, db: Database, seconds: float,
          record: Any) -> dict[str, Any]:
    rng = random.Random(int(os.environ.get("WEAVE_SOAK_SEED", "1515")))
    tenant = Tenant.create(db, f"soak-{secrets.token_hex(4)}")
    steady = engines.start()  # never killed: its memory is the one measured
    killable = [engines.start(), engines.start()]
    ports = [steady, *killable]
    client = tenant.client(engines.url(steady))
    for definition, _ in DEFINITIONS.values():
        client.publish(definition)
    stop_load, stop_workers = threading.Event(), threading.Event()
    started: dict[str, str] = {}  # workflow id -> definition
    errors: list[BaseException] = []
    samples = Samples()

    def _starter() -> None:
        clients = [tenant.client(engines.url(p)) for p in ports]
        try:
            n = 0
            while not stop_load.is_set():
                kind = rng.choice(sorted(DEFINITIONS))
                key = f"soak-{n}"
                wid = retrying(lambda k=key, d=kind: rng.choice(clients).start(
                    d, {"job": k}, idempotency_key=k)).workflow_id
                started[wid] = kind
                if kind == "signal":
                    retrying(lambda w=wid, k=key: rng.choice(clients)
                             .get_workflow_handle(w).signal("go", correlation_key=k,
                                                            signal_id=f"sig-{k}"))
                n += 1
                time.sleep(0.25)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            for c in clients:
                c.close()

    def _monitor() -> None:
        while not stop_workers.wait(2):
            samples.rss_kib.append(engines.rss_kib(steady))
            samples.connections.append(_connections(db))

    chaos = [ChaosWorker(tenant, engines.url(p), seed, stop_workers, HANDLERS)
             for seed, p in enumerate([*ports, *killable])]
    threads = [threading.Thread(target=_starter, daemon=True),
               threading.Thread(target=_monitor, daemon=True)]
    with engines.restarting(killable[0]) as deaths0, \
            engines.restarting(killable[1]) as deaths1, \
            sdk_worker(tenant, engines.url(steady), {
                "echo": _echo, "job_status": lambda d: _job_status(d)}, concurrency=2):
        for thread in [*threads, *chaos]:
            thread.start()
        began = time.monotonic()
        next_kill = began + rng.uniform(5, 12)
        while time.monotonic() - began < seconds and not errors:
            if time.monotonic() >= next_kill:
                os.kill(engines.servers[rng.choice(killable)].process.pid, 9)
                next_kill = time.monotonic() + rng.uniform(6, 14)
            time.sleep(0.2)
        stop_load.set()
        threads[0].join(120)
        statuses = tenant.drain(len(started), seconds=300)
        stop_workers.set()
        for thread in [threads[1], *chaos]:
            thread.join(60)
        kills = len(deaths0) + len(deaths1)
    assert errors == [], errors
    assert [w.failure for w in chaos if w.failure is not None] == []
    # nothing lost: every acknowledged start is there, and succeeded
    assert set(statuses) == set(started) and set(statuses.values()) == {"SUCCEEDED"}, \
        sorted((w, s) for w, s in statuses.items() if s != "SUCCEEDED")[:10]
    per_kind = {k: sum(1 for d in started.values() if d == k) for k in DEFINITIONS}
    behaviours: dict[str, int] = {}
    for worker in chaos:
        for name, count in worker.seen.items():
            behaviours[name] = behaviours.get(name, 0) + count
    figures = {
        "seconds": seconds, "instances": len(started), "per_definition": per_kind,
        "engine_kills": kills, "worker_behaviours": behaviours,
        "rss_kib": _summary(samples.rss_kib), "db_connections": _summary(samples.connections),
    }
    print(f"\nsoak figures: {figures}")
    for key, value in figures.items():
        record(key, value)
    assert kills >= 2 and all(behaviours.get(b, 0) > 0 for b in ("crash", "late", "duplicate"))
    _assert_flat(samples)
    client.close()
    return figures


def _summary(values: list[int]) -> dict[str, int]:
    half = len(values) // 2
    return {"samples": len(values), "first": values[0], "last": values[-1],
            "max_first_half": max(values[:half] or values),
            "max_second_half": max(values[half:] or values),
            "median": int(statistics.median(values))}


def _assert_flat(samples: Samples) -> None:
    """Memory and connections stayed flat: the second half of the run never goes above
    the first half's peak by more than a margin (warm-up happens in the first half)."""
    rss, conns = _summary(samples.rss_kib), _summary(samples.connections)
    assert rss["max_second_half"] <= rss["max_first_half"] * 1.25 + 16 * 1024, rss
    assert conns["max_second_half"] <= conns["max_first_half"] + 10, conns
    assert conns["max_second_half"] <= 3 * 2 * 10 + 10, conns  # three engines' pools


def test_soak_short(engines: Engines, own_db: Database,
                    record_property: Any) -> None:
    """The soak for 60 s (CI)."""
    _soak(engines, own_db, 60, record_property)


@pytest.mark.slow
def test_soak(engines: Engines, own_db: Database, record_property: Any) -> None:
    """The soak for ``WEAVE_SOAK_SECONDS`` (default 600)."""
    _soak(engines, own_db, float(os.environ.get("WEAVE_SOAK_SECONDS", "600")),
          record_property)
