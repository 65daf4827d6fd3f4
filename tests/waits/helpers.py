"""Drivers for the waits tests: definitions with waits, signals, due rows, wait records."""

from __future__ import annotations

import secrets
from typing import Any

import sqlalchemy as sa

from tests.runtime.helpers import rows
from weave_core.engine import Engine
from weave_core.foundation.exactjson import JSON
from weave_core.runtime.checkpoints import run_pending
from weave_core.runtime.waits import accept_signal
from weave_core.runtime.waits.signals import Acceptance, SignalRequest
from weave_core.storage.schema import (
    weave_pending_advances,
    weave_poll_rounds,
    weave_signals,
    weave_waits,
)

ACTOR = "token:signaller"


def signal_step(step_id: str, name: str = "approval", *, key: JSON = None,
                timeout: int | None = None, param_version: str | None = None) -> dict[str, Any]:
    step: dict[str, Any] = {"id": step_id, "kind": "signal", "name": name,
                            "correlation_key": key if key is not None else {"$ref": "input.job"}}
    if timeout is not None:
        step["timeout_seconds"] = timeout
    if param_version is not None:
        step["param_version"] = param_version
    return step


def timer_step(step_id: str, seconds: int) -> dict[str, Any]:
    return {"id": step_id, "kind": "timer", "seconds": seconds}


def poll_step(step_id: str = "outcome", *, rounds: int = 3, interval: int = 30,
              deadline: int = 300, attempts: int = 1, receipt: bool = True,
              queue: str = "q") -> dict[str, Any]:
    step: dict[str, Any] = {
        "id": step_id, "kind": "poll", "queue": queue,
        "handler": {"name": "job_status", "version": "1"},
        "input": {"job_id": {"$ref": "input.job"}},
        "max_rounds": rounds, "interval_seconds": interval, "deadline_seconds": deadline,
        "attempts_per_round": attempts,
        "classify": {"field": "status", "pending": ["QUEUED", "RUNNING"],
                     "succeeded": ["DONE"], "failed": ["REJECTED"], "needs_review": ["HELD"]},
    }
    if receipt:
        step["receipt"] = {"name": "receipt", "correlation_key": {"$ref": "input.job"}}
    return step


def send(engine: Engine, ns: str, wid: str, name: str = "approval", key: str = "job-1",
         payload: JSON = None, *, signal_id: str | None = None, param_version: str = "1",
         deliver: bool = True) -> Acceptance:
    acc = accept_signal(engine, ns, wid, SignalRequest(
        signal_id or f"sig-{secrets.token_hex(6)}", name, key,
        payload if payload is not None else {"ok": True}, param_version), actor=ACTOR)
    if deliver and acc.pending_id is not None:
        run_pending(engine, acc.pending_id)
    return acc


def waits_of(engine: Engine, wid: str) -> list[Any]:
    w = weave_waits
    return rows(engine, w, w.c.instance_id == wid, order=w.c.opened_at)


def wait_of(engine: Engine, wid: str, step_id: str) -> Any:
    (found,) = [w for w in waits_of(engine, wid) if w.step_id == step_id]
    return found


def signals_of(engine: Engine, wid: str) -> list[Any]:
    s = weave_signals
    return rows(engine, s, s.c.instance_id == wid, order=s.c.id)


def rounds_of(engine: Engine, wid: str) -> list[Any]:
    r = weave_poll_rounds
    return rows(engine, r, r.c.instance_id == wid, order=r.c.round)


def due_rows(engine: Engine, wid: str, kind: str) -> list[Any]:
    p = weave_pending_advances
    return rows(engine, p, p.c.instance_id == wid, p.c.kind == kind, p.c.state == "PENDING")


def set_wait(engine: Engine, activation_id: str, **values: Any) -> None:
    w = weave_waits

    def _set(conn: sa.Connection) -> None:
        conn.execute(sa.update(w).where(w.c.activation_id == activation_id).values(**values))

    engine.db.transaction(_set, name="test_set_wait")
