"""``weave bench waitscan`` at tiny size through the harness, and its SQL clones: they must be
waiting instances the kernel treats as its own, or the scan figures would measure nothing."""

from __future__ import annotations

import math

from tests.conftest import MYSQL_SERVER_URL, create_mysql_database, drop_mysql_database
from tests.runtime.helpers import instance, start, transitions_of
from tests.waits.helpers import due_rows, send
from weave_bench.runner import run
from weave_bench.scan_scenario import prepare
from weave_core.engine import Engine
from weave_core.runtime import run_pending
from weave_core.storage.db import set_clock_offset


def test_waitscan_scenario_runs_and_the_scans_use_their_due_indexes() -> None:
    drop_mysql_database(create_mysql_database("weave_probe"))  # fail early without MariaDB
    result = run(["waitscan"], repeat=1, size="tiny", server_url=MYSQL_SERVER_URL)
    figures = {s.name: s.median for s in result.summaries if s.scenario == "waitscan"}
    for name in ("tick_scan_ms_1000_waiting", "tick_scan_ms_10000_waiting",
                 "tick_scan_ratio_10000_to_1000", "clone_s"):
        assert math.isfinite(figures[name]) and figures[name] > 0, figures
    assert figures["explain_inbox_uses_due_index"] == 1, figures
    assert figures["explain_pending_advances_uses_due_index"] == 1, figures
    assert figures["explain_pending_advances_rows"] >= 0, figures


def test_clones_are_waiting_instances_the_kernel_can_settle(engine: Engine) -> None:
    cloner = prepare(engine)
    cloner.clone(engine, 3, 10)
    far, sig = (cloner.clone_id(cloner.template_of(n).instance_id, n) for n in (9, 10))
    # The same start again finds the clone: idempotency key and request hash are its own.
    again = start(engine, cloner.namespace, "sig", {"k": cloner.key(10)},
                  key=cloner.idempotency_key(10), version="1")
    assert (again.created, again.instance.instance_id) == (False, sig)
    assert [t.kind for t in transitions_of(engine, far)] == [
        t.kind for t in transitions_of(engine, cloner.templates[0].instance_id)]

    send(engine, cloner.namespace, sig, "go", cloner.key(10))
    (timer,) = due_rows(engine, far, "TIMER")
    set_clock_offset(engine.db, 31 * 86_400)  # past every clone's due time (1-30 days)
    run_pending(engine, timer.id)
    assert instance(engine, sig).status == "SUCCEEDED"
    assert instance(engine, far).status == "SUCCEEDED"
    assert instance(engine, cloner.clone_id(cloner.templates[0].instance_id, 7)).status == (
        "WAITING")
