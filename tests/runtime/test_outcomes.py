"""The result long poll (``GET …/workflows/{id}/result``): answered when the instance is
done, woken in-process, re-read for changes made elsewhere; and its refusals."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest

from tests.http.conftest import Tenant, client_for, new_tenant
from tests.http.helpers import assert_problem
from tests.runtime.conftest import make_engine
from tests.runtime.helpers import definition, publish, report, run_worker, start, task, work
from weave_core.access.identity import Permission
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.runtime import outcomes
from weave_core.storage.db import Database

WF = "/v1/namespaces/{ns}/workflows"


def _tenant(engine: Engine) -> Tenant:
    tenant = new_tenant(engine.db)
    publish(engine, tenant.namespace, definition("two", [task("a"), task("b")]))
    return tenant


def _result(client: Any, tenant: Tenant, wid: str, query: str = "") -> httpx.Response:
    response: httpx.Response = client.get(
        f"{WF.format(ns=tenant.namespace)}/{wid}/result{query}",
        headers=tenant.headers(Permission.READ))
    return response


def test_a_waiting_request_is_answered_when_the_instance_succeeds(any_engine: Engine) -> None:
    engine = any_engine
    tenant = _tenant(engine)
    client = client_for(engine)
    wid = start(engine, tenant.namespace, "two", {}).instance.instance_id
    now = exactjson.loads(_result(client, tenant, wid).content)
    assert (now["status"], now["done"], now["output"]) == ("RUNNING", False, None)
    answers: list[tuple[float, httpx.Response]] = []

    def _wait() -> None:
        began = time.monotonic()
        response = _result(client, tenant, wid, "?wait_seconds=30")
        answers.append((time.monotonic() - began, response))

    waiter = threading.Thread(target=_wait)
    waiter.start()
    time.sleep(0.3)
    assert answers == []  # still waiting: the instance runs
    run_worker(engine, tenant.namespace, {"a": {"n": 1}, "b": {"n": 2}})
    waiter.join(30)
    ((elapsed, response),) = answers
    assert response.status_code == 200, response.text
    got = exactjson.loads(response.content)
    assert got["status"] == "SUCCEEDED" and got["done"] is True
    assert got["settled_at"] is not None and got["workflow_id"] == wid
    assert elapsed < 10  # answered at the settle, far before the 30 s wait


def test_a_success_committed_here_is_answered_with_the_commit_without_a_read(
    any_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The committing transaction hands its waiters the outcome it wrote: the same answer,
    field for field, as a read of the row afterwards, and no read after the wake-up."""
    engine = any_engine
    tenant = _tenant(engine)
    client = client_for(engine)
    wid = start(engine, tenant.namespace, "two", {}).instance.instance_id
    reads: list[str] = []
    real = outcomes.read_outcome

    def _counted(db: Database, namespace: str, instance_id: str) -> outcomes.Outcome:
        reads.append(instance_id)
        return real(db, namespace, instance_id)

    monkeypatch.setattr(outcomes, "read_outcome", _counted)
    answers: list[httpx.Response] = []
    waiter = threading.Thread(target=lambda: answers.append(
        _result(client, tenant, wid, "?wait_seconds=30")))
    waiter.start()
    deadline = time.monotonic() + 10
    while not reads:  # its first read (RUNNING) is done: it waits
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.05)
    run_worker(engine, tenant.namespace, {"a": {"n": 1}, "b": {"n": 2, "list": [1, "x", None]}})
    waiter.join(30)
    (response,) = answers
    assert reads == [wid]  # the first read only: the success came with the commit
    handed = exactjson.loads(response.content)
    read_after = exactjson.loads(_result(client, tenant, wid).content)
    assert handed == read_after
    assert handed["status"] == "SUCCEEDED" and handed["output"] == {"n": 2, "list": [1, "x", None]}


def test_an_instance_settled_by_another_process_is_seen_by_the_re_read(
    engine: Engine, mysql_url: str
) -> None:
    tenant = _tenant(engine)
    client = client_for(engine)
    wid = start(engine, tenant.namespace, "two", {}).instance.instance_id
    other_db = Database.from_url(mysql_url)  # its commits wake no waiter of this engine
    other = make_engine(other_db, engine.plugins, node_id="node-b")
    answers: list[httpx.Response] = []
    waiter = threading.Thread(target=lambda: answers.append(
        _result(client, tenant, wid, "?wait_seconds=20")))
    waiter.start()
    try:
        time.sleep(0.2)
        run_worker(other, tenant.namespace, {"a": {}, "b": {}})
        waiter.join(20)
    finally:
        other_db.dispose()
    (response,) = answers
    assert exactjson.loads(response.content)["status"] == "SUCCEEDED"


def test_review_is_done_and_a_wait_that_runs_out_says_so(any_engine: Engine) -> None:
    engine = any_engine
    tenant = _tenant(engine)
    client = client_for(engine)
    wid = start(engine, tenant.namespace, "two", {}).instance.instance_id
    began = time.monotonic()
    pending = exactjson.loads(_result(client, tenant, wid, "?wait_seconds=0.2").content)
    assert pending["done"] is False and time.monotonic() - began >= 0.2
    (a,) = work(engine, tenant.namespace, handlers=["a"])
    report(engine, tenant.namespace, a, fail=True)
    review = exactjson.loads(_result(client, tenant, wid, "?wait_seconds=5").content)
    assert (review["status"], review["done"]) == ("NEEDS_REVIEW", True)
    assert review["review_reason"] == "task_failed"


def test_bad_waits_unknown_and_foreign_instances_are_refused(any_engine: Engine) -> None:
    engine = any_engine
    tenant = _tenant(engine)
    client = client_for(engine)
    wid = start(engine, tenant.namespace, "two", {}).instance.instance_id
    for bad in ("-1", "61", "soon", "nan", "inf"):
        assert_problem(_result(client, tenant, wid, f"?wait_seconds={bad}"), 422,
                       "validation_failed")
    assert_problem(_result(client, tenant, "wf_missing"), 404, "not_found")
    stranger = new_tenant(engine.db)
    assert_problem(_result(client, stranger, wid), 404, "not_found")
