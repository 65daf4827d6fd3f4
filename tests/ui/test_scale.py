"""The console on big tables (MariaDB): the list of 10,000 instances sends only
index-backed statements (every one it sends is EXPLAINed), and the page of a 200-step
instance costs the same number of statements as the page of a 3-step one."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from tests.runtime.helpers import definition, publish, run_worker, start, task
from tests.ui.conftest import Console
from weave_core.access.identity import Permission, create_namespace, create_token
from weave_core.engine import Engine
from weave_core.storage.schema import weave_instances, weave_steps, weave_waits

CLONES = 10_000


@contextmanager
def statements(engine: Engine) -> Iterator[list[tuple[str, Any]]]:
    """Every statement sent to the database meanwhile, with its parameters."""
    sent: list[tuple[str, Any]] = []

    def listen(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any,
               executemany: bool) -> None:
        sent.append((statement, parameters))

    event.listen(engine.db.engine, "before_cursor_execute", listen)
    try:
        yield sent
    finally:
        event.remove(engine.db.engine, "before_cursor_execute", listen)


def _clone(engine: Engine, wid: str) -> None:
    """10,000 copies of one real waiting instance: its instance, step and wait rows with
    new ids, spread over time, a third in review and a fifth paused."""
    i, s, w = weave_instances, weave_steps, weave_waits

    def _copy(conn: sa.Connection) -> None:
        inst = conn.execute(sa.select(i).where(i.c.instance_id == wid)).mappings().one()
        steps = conn.execute(sa.select(s).where(s.c.instance_id == wid)).mappings().all()
        waits = conn.execute(sa.select(w).where(w.c.instance_id == wid)).mappings().all()
        rows_i, rows_s, rows_w = [], [], []
        for n in range(CLONES):
            new = f"wf_{secrets.token_hex(14)}"
            review = n % 3 == 0
            rows_i.append({**inst, "instance_id": new,
                           "created_at": inst["created_at"] - timedelta(seconds=n + 1),
                           "status": "NEEDS_REVIEW" if review else inst["status"],
                           "review_reason": "task_failed" if review else None,
                           "paused": n % 5 == 0,
                           "idempotency_key": f"clone-{n}"})
            rows_s += [{**r, "instance_id": new} for r in steps]
            rows_w += [{**r, "instance_id": new, "activation_id": f"act_{secrets.token_hex(14)}"}
                       for r in waits]
        conn.execute(sa.insert(i), rows_i)
        conn.execute(sa.insert(s), rows_s)
        conn.execute(sa.insert(w), rows_w)

    engine.db.transaction(_copy, name="clone_instances")


def _explain(engine: Engine, sent: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    plans = []
    for statement, parameters in sent:
        if not statement.lstrip().upper().startswith("SELECT") or "FROM" not in statement.upper():
            continue

        def _plan(conn: sa.Connection, stmt: str = statement, params: Any = parameters
                  ) -> list[Any]:
            return list(conn.exec_driver_sql("EXPLAIN " + stmt, params).mappings())

        for row in engine.db.read(_plan):
            plans.append({"sql": statement[:160], **dict(row)})
    return plans


def test_the_list_of_10000_instances_uses_indexes_only(mysql_engine: Engine) -> None:
    ns = f"ui-big-{secrets.token_hex(4)}"
    create_namespace(mysql_engine.db, ns)
    token = create_token(mysql_engine.db, ns, [Permission.READ])
    publish(mysql_engine, ns, definition("wait", [
        {"id": "approval", "kind": "signal", "name": "approval", "correlation_key": "k"}]))
    wid = start(mysql_engine, ns, "wait", {}).instance.instance_id
    _clone(mysql_engine, wid)
    console = Console(mysql_engine)
    console.sign_in(token)
    base = f"/ui/n/{ns}/instances"
    first = console.client.get(base)
    cursor = first.text.split("cursor=")[1].split('"')[0].replace("&amp;", "&")
    pages = ["", "?status=NEEDS_REVIEW", "?definition_id=wait&version=1", "?paused=true",
             "?created_after=2000-01-01T00:00&created_before=2100-01-01T00:00",
             "?status=WAITING&created_after=2000-01-01T00:00", f"?cursor={cursor}",
             "?partial=1"]
    for query in pages:
        with statements(mysql_engine) as sent:
            page = console.client.get(base + query)
        assert page.status_code == 200, page.text
        assert page.text.count('<tr class="instance">') == 50, query
        plans = _explain(mysql_engine, sent)
        assert len(plans) >= 4, plans  # authenticate, the list, the waits, the steps
        for plan in plans:
            assert plan["type"] != "ALL" and plan["key"] is not None, (query, plan)
            assert "filesort" not in str(plan.get("Extra") or "").lower(), (query, plan)
        keys = {p["key"] for p in plans}
        assert keys & {"ix_weave_instances_created", "ix_weave_instances_status",
                       "ix_weave_instances_definition"}, (query, keys)
        assert "ix_weave_waits_instance" in keys, (query, keys)


def _page_statements(engine: Engine, console: Console, ns: str, steps: int) -> int:
    did = f"seq{steps}"
    publish(engine, ns, definition(did, [task(f"s{n}") for n in range(steps)]))
    wid = start(engine, ns, did, {}).instance.instance_id
    ran = run_worker(engine, ns, {f"s{n}": {"n": n} for n in range(steps)}, rounds=steps + 5)
    assert len(ran) == steps
    with statements(engine) as sent:
        page = console.client.get(f"/ui/n/{ns}/instances/{wid}?step=s1")
    assert page.status_code == 200 and "SUCCEEDED" in page.text
    assert page.text.count("data-step=") == steps
    return len(sent)


def test_a_200_step_instance_page_costs_a_bounded_number_of_statements(
        mysql_engine: Engine) -> None:
    ns = f"ui-long-{secrets.token_hex(4)}"
    create_namespace(mysql_engine.db, ns)
    console = Console(mysql_engine)
    console.sign_in(create_token(mysql_engine.db, ns, [Permission.READ]))
    small = _page_statements(mysql_engine, console, ns, 3)
    large = _page_statements(mysql_engine, console, ns, 200)
    assert large == small, (small, large)
    assert large <= 20, large
