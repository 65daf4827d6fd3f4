"""The controls on the embedded default too: pause, resume, cancel and recover through the
kernel functions, on MariaDB and on SQLite alike."""

from __future__ import annotations

import pytest

from tests.controls.helpers import control, do_recover
from tests.runtime.conftest import make_engine
from tests.runtime.helpers import (
    definition,
    instance,
    new_namespace,
    publish,
    report,
    start,
    steps,
    task,
    work,
)
from tests.waits.helpers import timer_step
from weave_core.engine import Engine
from weave_core.plugins.host import PluginHost
from weave_core.runtime.controls.errors import ControlVersionConflictError
from weave_core.storage.db import Database


@pytest.fixture
def any_engine(any_db: Database, plugin_host: PluginHost) -> Engine:
    return make_engine(any_db, plugin_host)


def _start(engine: Engine, steps_: list[dict[str, object]]) -> tuple[str, str]:
    ns = new_namespace(engine)
    publish(engine, ns, definition("sq", steps_))
    return ns, start(engine, ns, "sq").instance.instance_id


def test_pause_and_resume(any_engine: Engine) -> None:
    engine = any_engine
    ns, wid = _start(engine, [task("a"), task("b")])
    assert control(engine, ns, wid, "pause", expected=0).body["paused"] is True
    assert work(engine, ns, handlers=["a"]) == []
    with pytest.raises(ControlVersionConflictError):
        control(engine, ns, wid, "resume", expected=0)
    assert control(engine, ns, wid, "resume", expected=1).body["paused"] is False
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, {})
    (b,) = work(engine, ns, handlers=["b"])
    report(engine, ns, b, {})
    assert instance(engine, wid).status == "SUCCEEDED"


def test_cancel_collects_and_cancels_waits(any_engine: Engine) -> None:
    engine = any_engine
    ns, wid = _start(engine, [{"id": "p", "kind": "parallel", "branches": {
        "x": [task("x")], "y": [timer_step("nap", 3600)]}}])
    (x,) = work(engine, ns, handlers=["x"])
    assert control(engine, ns, wid, "cancel").body["status"] == "CANCELLING"
    assert steps(engine, wid)["nap"].phase == "CANCELLED"
    report(engine, ns, x, cancel=True)
    assert instance(engine, wid).status == "CANCELLED"


def test_recover_a_failed_step(any_engine: Engine) -> None:
    engine = any_engine
    ns, wid = _start(engine, [task("a"), task("b")])
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, fail=True)
    assert instance(engine, wid).status == "NEEDS_REVIEW"
    body = do_recover(engine, ns, wid, "a", int(steps(engine, wid)["a"].version)).body
    assert body["workflow"]["status"] == "RUNNING"
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, {})
    (b,) = work(engine, ns, handlers=["b"])
    report(engine, ns, b, {})
    assert instance(engine, wid).status == "SUCCEEDED"
