"""A missing handler is an observable wait (#12 item 6, R-11.3): a task PENDING for a
(queue, handler, version) no worker asked for within the window shows ``handler_unavailable``
in the instance view, the SDK and ``weave show``; it clears once a worker asks for it, and
``GET …/queues/{queue}`` lists the workers and handlers seen. MariaDB and SQLite (the
sightings upsert differs)."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from tests.http.conftest import Tenant
from tests.http.helpers import JSON_HEADERS, body
from tests.runtime.helpers import definition, publish
from weave_core.dispatch.sightings import HANDLER_SEEN_WINDOW_S
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.storage.db import set_clock_offset
from weave_core.storage.schema import weave_worker_sightings
from weave_http.app import create_app
from weave_http.cli import build_parser
from weave_http.cli.workflows import _show, run_command
from weave_sdk import Client, WaitReasonInfo


@pytest.fixture
def engine(any_engine: Engine) -> Iterator[Engine]:
    yield any_engine
    set_clock_offset(any_engine.db, 0)


def _claim(client: TestClient, tenant: Tenant, worker: str, name: str,
           version: str) -> list[Any]:
    response = client.post(f"/v1/namespaces/{tenant.namespace}/queues/pay/claim",
                           content=body({"worker_id": worker, "max_tasks": 1,
                                         "handlers": [{"name": name, "version": version}]}),
                           headers={**JSON_HEADERS, **tenant.headers("work")})
    assert response.status_code == 200, response.text
    return list(exactjson.loads(response.content)["tasks"])


def _flush(client: TestClient, engine: Engine, namespace: str, *workers: str) -> None:
    """What the claim route starts every few seconds, run now, until ``workers`` show (the
    route's own flush, running in a pool thread, may hold some of them meanwhile)."""
    app: Any = client.app
    deadline = time.monotonic() + 5
    while True:
        app.state.sightings.flush(engine.db)
        if set(workers) <= _workers(engine, namespace) or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def _workers(engine: Engine, namespace: str) -> set[str]:
    t = weave_worker_sightings
    return set(engine.db.read(lambda c: c.execute(
        sa.select(t.c.worker_id).where(t.c.namespace == namespace)).scalars().all()))


def _reasons(client: TestClient, tenant: Tenant, wid: str) -> list[dict[str, Any]]:
    detail = exactjson.loads(client.get(f"/v1/namespaces/{tenant.namespace}/workflows/{wid}",
                                        headers=tenant.headers("read")).content)
    return list(detail["wait_reasons"])


def test_handler_unavailable_appears_and_clears_when_a_worker_arrives(
    engine: Engine, tenant: Tenant,
) -> None:
    publish(engine, tenant.namespace, definition("needs", [{
        "id": "charge", "kind": "task", "queue": "pay",
        "handler": {"name": "charge", "version": "1"}, "input": {}}]))
    client = TestClient(create_app(engine))
    wids = []
    for key in ("k1", "k2"):
        started = client.post(f"/v1/namespaces/{tenant.namespace}/workflows",
                              content=body({"definition_id": "needs", "input": {},
                                            "idempotency_key": key}),
                              headers={**JSON_HEADERS, **tenant.headers("start")})
        assert started.status_code == 201, started.text
        wids.append(exactjson.loads(started.content)["workflow_id"])

    (reason,) = _reasons(client, tenant, wids[0])
    assert (reason["reason"], reason["step_id"], reason["handler"], reason["handler_version"],
            reason["queue"], reason["last_seen_at"]) == (
        "handler_unavailable", "charge", "charge", "1", "pay", None)
    assert reason["window_seconds"] == HANDLER_SEEN_WINDOW_S

    # workers for another handler, and for another version of this one, do not serve it
    assert _claim(client, tenant, "w-other", "refund", "1") == []
    assert _claim(client, tenant, "w-old", "charge", "2") == []
    _flush(client, engine, tenant.namespace, "w-other", "w-old")
    assert [r["reason"] for r in _reasons(client, tenant, wids[0])] == ["handler_unavailable"]

    # a worker for charge@1 arrives: it takes one task; the other one no longer waits for
    # an absent handler (a worker asked for it), it waits for the worker's capacity
    assert len(_claim(client, tenant, "w-charge", "charge", "1")) == 1
    _flush(client, engine, tenant.namespace, "w-charge")
    assert [_reasons(client, tenant, w) for w in wids] == [[], []]

    queue = exactjson.loads(client.get(f"/v1/namespaces/{tenant.namespace}/queues/pay",
                                       headers=tenant.headers("read")).content)
    assert {(w["worker_id"], w["handler"], w["handler_version"]) for w in queue["workers"]} == {
        ("w-other", "refund", "1"), ("w-old", "charge", "2"), ("w-charge", "charge", "1")}
    assert all(w["last_seen_at"].endswith("Z") for w in queue["workers"])

    # no worker asked within the window: the reason comes back, with the last sighting
    set_clock_offset(engine.db, HANDLER_SEEN_WINDOW_S + 5)
    pending = [w for w in wids if _reasons(client, tenant, w)]
    assert len(pending) == 1
    (stale,) = _reasons(client, tenant, pending[0])
    assert stale["reason"] == "handler_unavailable" and stale["last_seen_at"] is not None

    with Client("http://testserver", tenant.token("read"), tenant.namespace,
                transport=client._transport) as sdk:
        view = sdk.get_workflow(pending[0])
        assert isinstance(view.wait_reasons[0], WaitReasonInfo)
        assert view.tasks[0].wait_reason == "handler_unavailable"
        out, err = io.StringIO(), io.StringIO()
        args = build_parser().parse_args(["show", pending[0]])
        assert run_command(_show, args, client=sdk, out=out, err=err) == 0, err.getvalue()
    assert "waiting for\n  handler_unavailable: task " in out.getvalue()
    assert "charge@1 on queue pay" in out.getvalue()


def test_a_worker_that_takes_its_work_through_claim_next_is_seen(
    engine: Engine, tenant: Tenant,
) -> None:
    """A busy worker may never send a plain claim: the handlers of its ``claim_next``
    count as a sighting too, so its tasks do not show ``handler_unavailable``."""
    publish(engine, tenant.namespace, definition("busy", [{
        "id": "charge", "kind": "task", "queue": "pay",
        "handler": {"name": "charge", "version": "1"}, "input": {}}]))
    client = TestClient(create_app(engine))
    wids = []
    for key in ("b1", "b2", "b3"):
        started = client.post(f"/v1/namespaces/{tenant.namespace}/workflows",
                              content=body({"definition_id": "busy", "input": {},
                                            "idempotency_key": key}),
                              headers={**JSON_HEADERS, **tenant.headers("start")})
        assert started.status_code == 201, started.text
        wids.append(exactjson.loads(started.content)["workflow_id"])
    (task,) = _claim(client, tenant, "w-busy", "charge", "1")
    _flush(client, engine, tenant.namespace, "w-busy")
    set_clock_offset(engine.db, 30)  # the worker is busy on it: it keeps its lease
    beat = client.post(f"/v1/namespaces/{tenant.namespace}/tasks/{task['task_id']}/heartbeat",
                       content=body({"attempt_id": task["attempt_id"]}),
                       headers={**JSON_HEADERS, **tenant.headers("work")})
    assert beat.status_code == 200, beat.text
    set_clock_offset(engine.db, HANDLER_SEEN_WINDOW_S + 5)  # its plain claim is stale now
    waiting = [w for w in wids if _reasons(client, tenant, w)]
    assert len(waiting) == 2

    done = client.post(
        f"/v1/namespaces/{tenant.namespace}/tasks/{task['task_id']}/complete",
        content=body({"attempt_id": task["attempt_id"], "outcome": "succeeded", "output": {},
                      "claim_next": {"worker_id": "w-busy", "max_tasks": 1,
                                     "handlers": [{"name": "charge", "version": "1"}]}}),
        headers={**JSON_HEADERS, **tenant.headers("work")})
    assert done.status_code == 200, done.text
    assert len(exactjson.loads(done.content)["next_tasks"]) == 1  # one more, one left
    app: Any = client.app
    app.state.sightings.flush(engine.db)
    assert [w for w in wids if _reasons(client, tenant, w)] == []
