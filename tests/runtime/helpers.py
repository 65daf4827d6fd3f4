"""Kernel-level drivers for runtime tests: publish, start, act as a worker, read rows."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from weave_core.access.identity import create_namespace
from weave_core.definitions.format import validate_definition
from weave_core.definitions.store import store_definition
from weave_core.dispatch import HandlerRef, Report, ReportOutcome, TaskError, claim, complete
from weave_core.dispatch.model import ClaimedTask
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.exactjson import JSON
from weave_core.runtime import StartRequest, StartResult, start_workflow
from weave_core.runtime.consumer import ConsumeResult, consume_task_results
from weave_core.runtime.step import complete_step
from weave_core.storage.schema import (
    weave_activations,
    weave_audit,
    weave_inbox,
    weave_instances,
    weave_pending_advances,
    weave_steps,
    weave_tasks,
    weave_transitions,
)

ACTOR = "token:test"


def task(step_id: str, handler: str | None = None, *, queue: str = "q", inp: JSON = None,
         output_schema: JSON = None) -> dict[str, Any]:
    step: dict[str, Any] = {
        "id": step_id, "kind": "task", "queue": queue,
        "handler": {"name": handler or step_id, "version": "1"},
        "input": inp if inp is not None else {},
    }
    if output_schema is not None:
        step["output_schema"] = output_schema
    return step


def definition(definition_id: str, steps: Sequence[JSON], **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema_version": 1, "definition_id": definition_id, "version": "1",
        "input_schema": {"type": "object"}, "failure_policy": "REVIEW", "steps": list(steps),
    }
    doc.update(extra)
    return doc


def new_namespace(engine: Engine) -> str:
    name = f"rt-{secrets.token_hex(5)}"
    create_namespace(engine.db, name)
    return name


def publish(engine: Engine, namespace: str, document: JSON) -> None:
    validated = validate_definition(document, engine.plugins, engine.limits)
    store_definition(engine.db, ACTOR, namespace, validated)


def start(engine: Engine, namespace: str, definition_id: str, inp: JSON = None, *,
          key: str | None = None, version: str = "latest") -> StartResult:
    return start_workflow(
        engine, namespace,
        StartRequest(definition_id, version, inp if inp is not None else {},
                     key or secrets.token_hex(8)),
        actor=ACTOR,
    )


def work(engine: Engine, namespace: str, *, queue: str = "q", handlers: Sequence[str] = (),
         max_tasks: int = 32) -> list[ClaimedTask]:
    """Claim what is claimable for these handler names (version "1")."""
    return claim(engine.db, namespace=namespace, queue=queue, worker_id="w1",
                 handlers=[HandlerRef(h, "1") for h in handlers], max_tasks=max_tasks)


def report(engine: Engine, namespace: str, claimed: ClaimedTask, output: JSON = None, *,
           fail: bool = False, cancel: bool = False, retryable: bool = False,
           consume: bool = True) -> list[ConsumeResult]:
    if fail:
        rep = Report(ReportOutcome.FAILED, error=TaskError("boom", "it failed", retryable))
    elif cancel:
        rep = Report(ReportOutcome.CANCELLED)
    else:
        rep = Report(ReportOutcome.SUCCEEDED, output=output)
    if not consume:
        complete(engine.db, namespace=namespace, task_id=claimed.task_id,
                 attempt_id=claimed.attempt_id, report=rep, actor="worker:test")
        return []
    # What the complete route runs: the step transaction (or the classic path it falls
    # back to), so that every runtime test goes through it.
    done = complete_step(engine, namespace=namespace, task_id=claimed.task_id,
                         attempt_id=claimed.attempt_id, report=rep, actor="worker:test")
    if done.completion.replay:
        return []
    if done.consumed is None:  # left PENDING: what the tick would find now
        return consume_task_results(engine, namespace, claimed.task_id)
    return [done.consumed]


def run_worker(engine: Engine, namespace: str, outputs: dict[str, JSON], *,
               queue: str = "q", rounds: int = 50) -> list[str]:
    """Claim and complete until nothing is claimable; return the handlers run, in order."""
    ran: list[str] = []
    for _ in range(rounds):
        claimed = work(engine, namespace, queue=queue, handlers=sorted(outputs))
        if not claimed:
            break
        for c in claimed:
            ran.append(c.handler)
            report(engine, namespace, c, outputs[c.handler])
    return ran


# --- reading rows ---------------------------------------------------------------------


def rows(engine: Engine, table: sa.Table, *where: Any, order: Any = None) -> list[Any]:
    stmt = sa.select(table).where(*where)
    if order is not None:
        stmt = stmt.order_by(order)
    return list(engine.db.read(lambda conn: conn.execute(stmt).all()))


def instance(engine: Engine, instance_id: str) -> Any:
    return rows(engine, weave_instances, weave_instances.c.instance_id == instance_id)[0]


def steps(engine: Engine, instance_id: str) -> dict[str, Any]:
    return {r.step_id: r for r in rows(engine, weave_steps,
                                       weave_steps.c.instance_id == instance_id)}


def activations(engine: Engine, instance_id: str) -> list[Any]:
    a = weave_activations
    return rows(engine, a, a.c.instance_id == instance_id, order=a.c.created_at)


def tasks_of(engine: Engine, instance_id: str) -> list[Any]:
    a, t = weave_activations, weave_tasks
    return list(engine.db.read(lambda conn: conn.execute(
        sa.select(t).join(a, a.c.task_id == t.c.task_id).where(a.c.instance_id == instance_id)
    ).all()))


def inbox_of(engine: Engine, instance_id: str) -> list[Any]:
    a, i = weave_activations, weave_inbox
    return list(engine.db.read(lambda conn: conn.execute(
        sa.select(i).join(a, a.c.activation_id == i.c.source_activation_id)
        .where(a.c.instance_id == instance_id).order_by(i.c.id)
    ).all()))


def audit_of(engine: Engine, instance_id: str) -> list[Any]:
    t = weave_audit
    return rows(engine, t, t.c.object_type == "workflow", t.c.object_id == instance_id,
                order=t.c.id)


def transitions_of(engine: Engine, instance_id: str) -> list[Any]:
    t = weave_transitions
    return rows(engine, t, t.c.instance_id == instance_id, order=t.c.revision)


def pending_of(engine: Engine, instance_id: str) -> list[Any]:
    p = weave_pending_advances
    return rows(engine, p, p.c.instance_id == instance_id, order=p.c.id)


def output_of(engine: Engine, instance_id: str) -> JSON:
    text = instance(engine, instance_id).output
    return None if text is None else exactjson.loads(text)
