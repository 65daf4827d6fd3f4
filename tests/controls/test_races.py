"""T13: control races on separate connections (threads), on MariaDB."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from tests.controls.helpers import control, do_recover, op_id
from tests.controls.test_review import _lose_lease, _unsafe
from tests.runtime.helpers import (
    activations,
    definition,
    instance,
    new_namespace,
    publish,
    report,
    start,
    steps,
    task,
    tasks_of,
    work,
)
from weave_core.dispatch import Report, ReportOutcome, complete
from weave_core.engine import Engine
from weave_core.foundation.errors import WeaveError
from weave_core.runtime import run_tick
from weave_core.runtime.consumer import consume_task_results
from weave_core.storage.schema import weave_operations


def _race(*fns: Callable[[], Any]) -> list[Any]:
    """Run ``fns`` at once, each on its own thread (and connection); results or errors."""
    barrier = threading.Barrier(len(fns))
    out: list[Any] = [None] * len(fns)

    def _run(i: int, fn: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            out[i] = fn()
        except WeaveError as exc:
            out[i] = exc

    threads = [threading.Thread(target=_run, args=(i, fn)) for i, fn in enumerate(fns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def _seq(engine: Engine) -> tuple[str, str]:
    ns = new_namespace(engine)
    publish(engine, ns, definition("seq", [task("a"), task("b")]))
    return ns, start(engine, ns, "seq").instance.instance_id


@pytest.mark.parametrize("round_", range(4))
def test_cancel_vs_result_consumption(engine: Engine, round_: int) -> None:
    ns, wid = _seq(engine)
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, {"ok": True}, consume=False)
    _race(lambda: control(engine, ns, wid, "cancel", expected=0),
          lambda: consume_task_results(engine, ns, a.task_id))
    run_tick(engine)
    assert instance(engine, wid).status == "CANCELLED"
    assert work(engine, ns, handlers=["a", "b"]) == []  # no dispatch after the cancel
    assert all(t.status in ("SUCCEEDED", "CANCELLED") for t in tasks_of(engine, wid))


@pytest.mark.parametrize("round_", range(4))
def test_pause_vs_tick(engine: Engine, round_: int) -> None:
    ns, wid = _seq(engine)
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, {}, consume=False)
    _race(lambda: control(engine, ns, wid, "pause", expected=0), lambda: run_tick(engine))
    run_tick(engine)
    assert steps(engine, wid)["a"].phase == "SUCCEEDED"
    assert work(engine, ns, handlers=["b"]) == []  # nothing dispatched while paused
    control(engine, ns, wid, "resume")
    run_tick(engine)
    claimed = work(engine, ns, handlers=["b"])
    assert [c.handler for c in claimed] == ["b"]
    assert len([x for x in activations(engine, wid) if x.step_id == "b"]) == 1
    report(engine, ns, claimed[0], {})
    assert instance(engine, wid).status == "SUCCEEDED"


def test_duplicate_resumes(engine: Engine) -> None:
    ns, wid = _seq(engine)
    control(engine, ns, wid, "pause", expected=0)
    same = op_id()
    first, second = _race(
        lambda: control(engine, ns, wid, "resume", expected=1, operation_id=same),
        lambda: control(engine, ns, wid, "resume", expected=1, operation_id=same))
    assert first.body == second.body and sorted([first.replayed, second.replayed]) == [
        False, True]
    o = weave_operations
    rows = engine.db.read(lambda c: c.execute(o.select().where(
        o.c.namespace == ns, o.c.operation_id == same)).all())
    assert len(rows) == 1
    # two different operations with the same expected version: exactly one wins
    control(engine, ns, wid, "pause", expected=2)
    results = _race(lambda: control(engine, ns, wid, "resume", expected=3),
                    lambda: control(engine, ns, wid, "resume", expected=3))
    errors = [r for r in results if isinstance(r, WeaveError)]
    assert len(errors) == 1 and errors[0].code == "control_version_conflict"
    assert instance(engine, wid).control_version == 4


def test_recovery_vs_late_result_and_duplicate_recovery(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("rl", [_unsafe("submit")]))
    wid = start(engine, ns, "rl").instance.instance_id
    claimed = _lose_lease(engine, ns, "submit")
    version = int(steps(engine, wid)["submit"].version)
    evidence = {"checked": "no job at the partner"}

    def _late() -> Any:
        return complete(engine.db, namespace=ns, task_id=claimed.task_id,
                        attempt_id=claimed.attempt_id,
                        report=Report(ReportOutcome.SUCCEEDED, output={}), actor="worker:slow")

    results = _race(
        lambda: do_recover(engine, ns, wid, "submit", version,
                           conclusion="effect_confirmed_absent", evidence=evidence),
        lambda: do_recover(engine, ns, wid, "submit", version,
                           conclusion="effect_confirmed_absent", evidence=evidence),
        _late)
    errors = [r for r in results[:2] if isinstance(r, WeaveError)]
    assert len(errors) == 1 and errors[0].code in ("not_in_review", "state_version_conflict")
    assert isinstance(results[2], WeaveError) and results[2].code == "attempt_superseded"
    acts = [x for x in activations(engine, wid) if x.step_id == "submit"]
    assert [x.state for x in acts] == ["NEEDS_REVIEW", "ACTIVE"]  # one new activation
    (again,) = work(engine, ns, handlers=["submit"])
    report(engine, ns, again, {"job": 7})
    assert instance(engine, wid).status == "SUCCEEDED"
