"""End to end at the kernel level: start, work tasks through dispatch, reach the end."""

from __future__ import annotations

from decimal import Decimal

import sqlalchemy as sa

from tests.round_trips import RoundTrips
from tests.runtime.helpers import (
    audit_of,
    definition,
    instance,
    new_namespace,
    output_of,
    publish,
    run_worker,
    start,
    steps,
    task,
    tasks_of,
    transitions_of,
)
from weave_core.engine import Engine
from weave_core.planning.program import compile
from weave_core.plugins.host import PluginHost
from weave_core.runtime import InstanceStatus


def test_sequential_tasks_run_to_succeeded(any_engine: Engine) -> None:
    engine = any_engine
    ns = new_namespace(engine)
    publish(engine, ns, definition("seq", [
        task("a", inp={"n": {"$ref": "input.n"}}),
        task("b", inp={"prev": {"$ref": "steps.a.output.x"}}),
        task("c"),
    ]))
    started = start(engine, ns, "seq", {"n": Decimal("1.10")})
    assert started.created
    wid = started.instance.instance_id
    assert started.instance.status == InstanceStatus.RUNNING
    ran = run_worker(engine, ns, {"a": {"x": Decimal("2.5")}, "b": {"y": 1}, "c": {"z": 2}})
    assert ran == ["a", "b", "c"]
    row = instance(engine, wid)
    assert row.status == "SUCCEEDED"
    assert output_of(engine, wid) is not None
    assert {s: r.phase for s, r in steps(engine, wid).items()} == {
        "a": "SUCCEEDED", "b": "SUCCEEDED", "c": "SUCCEEDED"}
    tasks = tasks_of(engine, wid)
    assert len(tasks) == 3
    inputs = {t.handler: t.input for t in tasks}
    assert inputs["a"] == '{"n":1.1}'  # canonical exact form
    assert inputs["b"] == '{"prev":2.5}'
    revisions = [t.revision for t in transitions_of(engine, wid)]
    assert revisions == list(range(1, len(revisions) + 1))
    assert row.revision == revisions[-1]
    actions = [a.action for a in audit_of(engine, wid)]
    assert actions == ["workflow.started"] + ["workflow.result.consumed"] * 3


def _branching(engine: Engine, ns: str) -> None:
    publish(engine, ns, definition("br", [
        task("a"),
        {"id": "route", "kind": "branch", "cases": [
            {"when": {"gt": [{"$ref": "input.amount"}, Decimal("1000.00")]},
             "steps": [task("big")]},
            {"default": True, "steps": [task("small")]},
        ]},
        task("after"),
    ]))


def test_branch_on_an_exact_decimal(any_engine: Engine) -> None:
    engine = any_engine
    ns = new_namespace(engine)
    _branching(engine, ns)
    outputs = {"a": {}, "big": {"b": 1}, "small": {"s": 1}, "after": {}}
    over = start(engine, ns, "br", {"amount": Decimal("1000.000000000000000000001")})
    run_worker(engine, ns, outputs)
    equal = start(engine, ns, "br", {"amount": Decimal("1000.0")})
    run_worker(engine, ns, outputs)
    big = steps(engine, over.instance.instance_id)
    assert big["big"].phase == "SUCCEEDED" and big["small"].phase == "SKIPPED"
    assert big["route"].phase == "SUCCEEDED"
    small = steps(engine, equal.instance.instance_id)
    assert small["small"].phase == "SUCCEEDED" and small["big"].phase == "SKIPPED"
    for wid in (over.instance.instance_id, equal.instance.instance_id):
        assert instance(engine, wid).status == "SUCCEEDED"
        assert len(tasks_of(engine, wid)) == 3


def test_parallel_with_a_join(any_engine: Engine) -> None:
    engine = any_engine
    ns = new_namespace(engine)
    publish(engine, ns, definition("par", [
        {"id": "fan", "kind": "parallel", "branches": {
            "left": [task("l1"), task("l2", inp={"v": {"$ref": "steps.l1.output.v"}})],
            "right": [task("r1")],
        }},
        task("join", inp={"left": {"$ref": "steps.fan.output.left"},
                          "r": {"$ref": "steps.r1.output"}}),
    ]))
    wid = start(engine, ns, "par", {}).instance.instance_id
    from tests.runtime.helpers import report, work
    first = work(engine, ns, handlers=["l1", "l2", "r1", "join"])
    assert sorted(c.handler for c in first) == ["l1", "r1"]
    run_worker(engine, ns, {"l1": {"v": 7}, "l2": {"w": 8}, "r1": {"r": 9}, "join": {}})
    # the first claims were already taken: complete them now, then drain
    for c in first:
        report(engine, ns, c, {"v": 7} if c.handler == "l1" else {"r": 9})
    ran = run_worker(engine, ns, {"l1": {"v": 7}, "l2": {"w": 8}, "r1": {"r": 9}, "join": {}})
    assert ran == ["l2", "join"]
    st = steps(engine, wid)
    assert st["fan"].phase == "SUCCEEDED"
    join = next(t for t in tasks_of(engine, wid) if t.handler == "join")
    assert join.input == '{"left":{"w":8},"r":{"r":9}}'
    assert instance(engine, wid).status == "SUCCEEDED"


def test_nested_composites(any_engine: Engine) -> None:
    engine = any_engine
    ns = new_namespace(engine)
    publish(engine, ns, definition("nest", [
        {"id": "outer", "kind": "parallel", "branches": {
            "x": [{"id": "choose", "kind": "branch", "cases": [
                {"when": {"eq": [{"$ref": "input.k"}, 1]},
                 "steps": [{"id": "inner", "kind": "parallel", "branches": {
                     "p": [task("p1")], "q": [task("q1")]}}]},
                {"default": True, "steps": [task("other")]},
            ]}],
            "y": [task("y1")],
        }},
        task("last"),
    ]))
    wid = start(engine, ns, "nest", {"k": 1}).instance.instance_id
    ran = run_worker(engine, ns, {h: {"h": h} for h in ("p1", "q1", "other", "y1", "last")})
    assert sorted(ran[:3]) == ["p1", "q1", "y1"] and ran[-1] == "last"
    st = steps(engine, wid)
    assert st["other"].phase == "SKIPPED"
    assert all(st[s].phase == "SUCCEEDED" for s in ("outer", "choose", "inner", "p1", "q1"))
    assert instance(engine, wid).status == "SUCCEEDED"


def test_failure_under_review_policy(any_engine: Engine) -> None:
    engine = any_engine
    ns = new_namespace(engine)
    publish(engine, ns, definition("fail", [task("a"), task("b")]))
    wid = start(engine, ns, "fail", {}).instance.instance_id
    from tests.runtime.helpers import report, work
    (claimed,) = work(engine, ns, handlers=["a"])
    results = report(engine, ns, claimed, fail=True)
    assert [r.outcome.value for r in results] == ["consumed"]
    row = instance(engine, wid)
    assert row.status == "NEEDS_REVIEW" and row.review_reason == "task_failed"
    st = steps(engine, wid)
    assert st["a"].phase == "FAILED" and "b" not in st
    assert work(engine, ns, handlers=["a", "b"]) == []


def test_a_timer_waits_on_database_time(any_engine: Engine) -> None:
    from tests.runtime.helpers import pending_of
    from weave_core.runtime import run_tick
    from weave_core.storage.db import set_clock_offset

    engine = any_engine
    ns = new_namespace(engine)
    publish(engine, ns, definition("tm", [{"id": "wait", "kind": "timer", "seconds": 30},
                                          task("after")]))
    wid = start(engine, ns, "tm", {}).instance.instance_id
    assert instance(engine, wid).status == "WAITING"
    (timer,) = [p for p in pending_of(engine, wid) if p.kind == "TIMER"]
    try:
        run_tick(engine)
        assert steps(engine, wid)["wait"].phase == "ACTIVE"
        set_clock_offset(engine.db, 31)
        run_tick(engine)
        assert steps(engine, wid)["wait"].phase == "SUCCEEDED"
        assert instance(engine, wid).status == "RUNNING"
        # the task became available at (moved) database time: claim it there
        assert run_worker(engine, ns, {"after": {}}) == ["after"]
    finally:
        set_clock_offset(engine.db, 0)
    assert instance(engine, wid).status == "SUCCEEDED"
    assert [p.state for p in pending_of(engine, wid) if p.id == timer.id] == ["DONE"]


def test_a_program_reads_its_queues_and_fields_without_copying_the_document(
    plugin_host: PluginHost,
) -> None:
    """What a start reads of the pinned program (admission's hot path): the sorted queues
    of its leaf steps, nested ones included, computed once; one field as a copy; a step's
    config without a copy for a caller that only reads it."""
    doc = definition("qs", [
        task("a", queue="payments"),
        {"id": "p", "kind": "parallel", "branches": {
            "l": [task("l1", queue="mail")], "r": [task("r1", queue="payments")]}},
    ], input_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    prog = compile(doc, plugin_host)
    assert prog.queues() == ("mail", "payments") and prog.queues() is prog.queues()
    schema = prog.field("input_schema")
    assert schema == doc["input_schema"] and prog.field("absent") is None
    assert isinstance(schema, dict)
    schema["properties"].clear()  # a copy: the program keeps its own
    assert prog.field("input_schema") == doc["input_schema"]
    assert prog.config_read_only("a") is prog.config_read_only("a")
    assert prog.config("a") is not prog.config("a")
    assert prog.config_read_only("a") == prog.config("a")


def test_a_start_sends_its_writes_together_and_answers_from_them(
    any_engine: Engine, round_trips: RoundTrips
) -> None:
    """A start is one read transaction (the original start of its key, else the definition)
    and one write transaction whose writes are queued and sent with the next statement
    that needs an answer (``weave_core.deferred``); the answer is the instance as stored."""
    engine = any_engine
    ns = new_namespace(engine)
    publish(engine, ns, definition("seq", [task("a"), task("b")]))
    start(engine, ns, "seq", {}, key="warm")  # caches warmed: the program, the config
    statements: list[str] = []
    listen = lambda conn, cursor, statement, *_: statements.append(statement)  # noqa: E731
    sa.event.listen(engine.db.engine, "before_cursor_execute", listen)
    before = round_trips.count
    try:
        started = start(engine, ns, "seq", {"n": 1}, key="counted")
    finally:
        sa.event.remove(engine.db.engine, "before_cursor_execute", listen)
    sent = round_trips.count - before
    # the program is compiled in this process already: the version is resolved, its
    # document (parsed exactly, possibly large) is not read again
    assert not [s for s in statements if "weave_definitions.document" in s]
    assert started.created and started.instance.status == InstanceStatus.RUNNING
    assert started.instance.input == {"n": 1} and started.instance.revision >= 1
    stored = instance(engine, started.instance.instance_id)
    assert started.instance.updated_at == stored.updated_at
    assert started.instance.revision == stored.revision
    assert [t.status for t in tasks_of(engine, started.instance.instance_id)] == ["PENDING"]
    if engine.db.dialect == "mysql":
        # 27 before the writes were queued, 4 before the audit id came from the server,
        # 3 before the answer was built from the writes (no read-back)
        assert sent <= 2, f"{sent} round trips"
    again = start(engine, ns, "seq", {"n": 1}, key="counted")  # the original, unchanged
    assert not again.created and again.instance.instance_id == started.instance.instance_id
