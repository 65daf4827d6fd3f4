"""The waits' scans and locking reads are served by their indexes (MariaDB fact 5, R-11.2),
including the tick's due scan while many instances wait on far timers and signals."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from tests.runtime.helpers import definition, new_namespace, publish, start
from tests.waits.helpers import signal_step, timer_step
from weave_core.engine import Engine
from weave_core.storage.schema import weave_pending_advances, weave_signals, weave_waits

NOW = datetime(2030, 1, 1)


def _plan(engine: Engine, stmt: sa.Select[tuple[int]]) -> dict[str, object]:
    compiled = stmt.compile(engine.db.engine, compile_kwargs={"literal_binds": True})
    rows = engine.db.read(lambda conn: conn.execute(sa.text(f"EXPLAIN {compiled}")).all())
    (plan,) = [dict(r._mapping) for r in rows]
    return plan


def _uses(plan: dict[str, object], index: str) -> None:
    assert plan["key"] == index, plan
    assert "filesort" not in str(plan.get("Extra") or "").lower(), plan


def test_scans_use_their_indexes_with_waiters_present(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("far", [timer_step("nap", 86400)]))
    publish(engine, ns, definition("sig", [signal_step("s", timeout=86400)]))
    for n in range(60):
        start(engine, ns, "far" if n % 2 else "sig", {"job": f"j{n}"})
    engine.db.transaction(lambda conn: conn.execute(sa.text(
        "ANALYZE TABLE weave_pending_advances, weave_signals, weave_waits")).all(),
        name="analyze")
    p, s, w = weave_pending_advances, weave_signals, weave_waits
    _uses(_plan(engine, sa.select(p.c.id).where(p.c.state == "PENDING", p.c.due_at <= NOW)
                .order_by(p.c.due_at, p.c.id).limit(100)), "ix_weave_pending_advances_due")
    _uses(_plan(engine, sa.select(s.c.id).where(s.c.state == "ACCEPTED",
                                                 s.c.expires_at <= NOW)
                .order_by(s.c.expires_at, s.c.id).limit(100)), "ix_weave_signals_expiry")
    match = (sa.select(s.c.id).where(
        s.c.instance_id == "wf_x", s.c.state == "ACCEPTED", s.c.name == "approval",
        s.c.correlation_key == "k", s.c.param_version == "1",
        (s.c.target_activation_id.is_(None)) | (s.c.target_activation_id == "act_x"))
        .order_by(s.c.accepted_at, s.c.id).limit(1))
    _uses(_plan(engine, match), "ix_weave_signals_match")
    _uses(_plan(engine, sa.select(w.c.activation_id).where(
        w.c.instance_id == "wf_x", w.c.state == "OPEN").order_by(w.c.activation_id)),
        "ix_weave_waits_instance")
