"""Every poll round's task is in the instance view (#12 item 5), not only the current one:
each with its round number and its attempts, over HTTP and in the SDK's typed view."""

from __future__ import annotations

from tests.http.conftest import client_for
from tests.runtime.helpers import definition, new_namespace, publish, report, start, task, work
from tests.waits.helpers import poll_step, rounds_of
from weave_core.access.identity import create_token
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.runtime import run_tick
from weave_core.storage.db import set_clock_offset
from weave_sdk import Client


def test_the_view_lists_the_task_of_every_round(engine: Engine) -> None:
    ns = new_namespace(engine)
    publish(engine, ns, definition("p", [poll_step(interval=10, deadline=300), task("after")]))
    wid = start(engine, ns, "p", {"job": "job-1"}).instance.instance_id
    for n, status in enumerate(("QUEUED", "RUNNING", "DONE"), start=1):
        if n > 1:
            set_clock_offset(engine.db, 11 * (n - 1))
            run_tick(engine)
        (claimed,) = work(engine, ns, handlers=["job_status"])
        report(engine, ns, claimed, {"status": status})
    round_tasks = {r.round: r.task_id for r in rounds_of(engine, wid)}
    assert sorted(round_tasks) == [1, 2, 3]

    token = create_token(engine.db, ns, ["read"])
    http = client_for(engine)
    detail = exactjson.loads(http.get(f"/v1/namespaces/{ns}/workflows/{wid}",
                                      headers={"Authorization": f"Bearer {token}"}).content)
    polled = {t["poll_round"]: t for t in detail["tasks"] if t["step_id"] == "outcome"}
    assert {n: t["task_id"] for n, t in polled.items()} == round_tasks
    assert all(len(t["attempts"]) == 1 and t["attempts"][0]["outcome"] == "succeeded"
               for t in polled.values())
    assert [t["step_id"] for t in detail["tasks"]].count("after") == 1

    with Client("http://testserver", token, ns, transport=http._transport) as sdk:
        view = sdk.get_workflow(wid)
    assert sorted(t.poll_round for t in view.tasks if t.poll_round is not None) == [1, 2, 3]
