"""The step transaction in process: statements, transactions and engine time per step.

``step`` drives ``weave_core.runtime.step.complete_step`` directly on the run's MariaDB
database — no HTTP, no worker — for seq10 instances, one step at a time, with a statement
listener on the engine. It isolates what the kernel costs per step from what the server
and the worker add (S1 and S2 measure those together).
"""

from __future__ import annotations

import secrets
import statistics
import time
from typing import Any

from sqlalchemy import event

from weave_bench import BenchContext, Metric, Target, scenario
from weave_bench.serving import QUEUE, seq10
from weave_core.access.identity import CLI_ACTOR, create_namespace
from weave_core.definitions.format import validate_definition
from weave_core.definitions.store import store_definition
from weave_core.dispatch import (
    HandlerRef,
    Report,
    ReportOutcome,
    claim,
    set_namespace_quota,
    set_queue_capacity,
)
from weave_core.engine import Engine
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.runtime import StartRequest, start_workflow
from weave_core.runtime.step import ClaimNext, complete_step
from weave_core.storage.db import Database

_HANDLERS = [HandlerRef("noop", "1")]


@scenario("step", "the step transaction in process: statements, commits, time per step")
def step_in_process(ctx: BenchContext) -> list[Metric]:
    runs = ctx.pick(2, 20, 100)
    db = Database.from_url(ctx.database_url, pool_size=2)
    engine = Engine(db=db, plugins=PluginHost.from_entry_points(), limits=Limits())
    namespace = f"bench-step-{secrets.token_hex(4)}"
    create_namespace(db, namespace)
    set_namespace_quota(db, namespace, 1_000_000, actor=CLI_ACTOR)
    set_queue_capacity(db, namespace, QUEUE, 1_000_000, actor=CLI_ACTOR)
    store_definition(db, CLI_ACTOR, namespace,
                     validate_definition(seq10(), engine.plugins, engine.limits))
    counts = {"statements": 0, "commits": 0}

    def _statement(*_: Any) -> None:
        counts["statements"] += 1

    def _commit(*_: Any) -> None:
        counts["commits"] += 1

    statements: list[int] = []
    commits: list[int] = []
    wall: list[float] = []
    cpu: list[float] = []
    one_txn = 0
    event.listen(db.engine, "before_cursor_execute", _statement)
    event.listen(db.engine, "commit", _commit)
    try:
        for _ in range(runs + 1):  # the first run warms the caches and is not counted
            start_workflow(engine, namespace, StartRequest("bench-seq10", "latest", {},
                                                           secrets.token_hex(8)),
                           actor=CLI_ACTOR)
            following = claim(db, namespace=namespace, queue=QUEUE, worker_id="bench",
                              handlers=_HANDLERS)
            index = 0
            while following:
                counts.update(statements=0, commits=0)
                began, began_cpu = time.perf_counter(), time.process_time()
                done = complete_step(
                    engine, namespace=namespace, task_id=following[0].task_id,
                    attempt_id=following[0].attempt_id,
                    report=Report(ReportOutcome.SUCCEEDED, output={"ok": True}),
                    actor="worker:bench", claim_next=ClaimNext("bench", _HANDLERS, 1))
                if index not in (0, 9):  # the middle steps: a successor each
                    statements.append(counts["statements"])
                    commits.append(counts["commits"])
                    wall.append((time.perf_counter() - began) * 1000)
                    cpu.append((time.process_time() - began_cpu) * 1000)
                    one_txn += done.one_transaction
                following = done.next_tasks
                index += 1
    finally:
        event.remove(db.engine, "before_cursor_execute", _statement)
        event.remove(db.engine, "commit", _commit)
        db.dispose()
    skip = 8  # the warm-up run's middle steps
    if len(wall) > skip:
        statements, commits, wall, cpu = (statements[skip:], commits[skip:], wall[skip:],
                                          cpu[skip:])
    note = f"{len(wall)} middle steps of seq10 (a successor each), in process, no HTTP"
    return [
        Metric("statements_per_step", statistics.median(statements), "count",
               note=note + "; target ≤ 20", target=Target("<=", 20)),
        Metric("commits_per_step", statistics.median(commits), "count",
               note="transactions per step; target 1", target=Target("==", 1)),
        Metric("one_transaction_share", one_txn / max(len(wall) + skip, 1), "ratio",
               note="steps that took the one-transaction path"),
        Metric("step_ms_p50", statistics.median(wall), "ms", note="complete_step, wall time"),
        Metric("engine_cpu_per_step", statistics.median(cpu), "ms",
               note="this process's CPU per step (SQLAlchemy, PyMySQL, the kernel)"),
    ]


__all__ = ["step_in_process"]
