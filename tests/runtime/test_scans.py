"""The tick's due scans are served by their indexes (MariaDB fact 5; R-11.2)."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from weave_core.engine import Engine
from weave_core.storage.schema import weave_inbox, weave_pending_advances


def _explain(engine: Engine, stmt: sa.Select[tuple[int]]) -> list[dict[str, object]]:
    compiled = stmt.compile(engine.db.engine, compile_kwargs={"literal_binds": True})
    return [dict(r._mapping) for r in engine.db.read(
        lambda conn: conn.execute(sa.text(f"EXPLAIN {compiled}")).all())]


def test_due_scans_use_their_indexes(engine: Engine) -> None:
    now = datetime(2030, 1, 1)
    i, p = weave_inbox, weave_pending_advances
    inbox = (sa.select(i.c.id).where(i.c.state == "PENDING", i.c.available_at <= now)
             .order_by(i.c.available_at, i.c.namespace, i.c.id).limit(100))
    pending = (sa.select(p.c.id).where(p.c.state == "PENDING", p.c.due_at <= now)
               .order_by(p.c.due_at, p.c.id).limit(100))
    for stmt, index in ((inbox, "ix_weave_inbox_due"),
                        (pending, "ix_weave_pending_advances_due")):
        (plan,) = _explain(engine, stmt)
        assert plan["key"] == index, plan
        assert "filesort" not in str(plan.get("Extra") or "").lower(), plan
