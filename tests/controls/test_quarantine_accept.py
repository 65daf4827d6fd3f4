"""A quarantined result has every way out, and a confirmed effect continues the workflow
(issue 12 items 1 and 2), through the HTTP routes and the SDK, on MariaDB and SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from tests.controls.test_review import _lose_lease, _unsafe
from tests.http.conftest import Tenant, client_for, new_tenant
from tests.runtime.conftest import make_engine
from tests.runtime.helpers import (
    activations,
    definition,
    inbox_of,
    instance,
    publish,
    report,
    steps,
    task,
    tasks_of,
    work,
)
from weave_core.access.identity import Permission
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.plugins.host import PluginHost
from weave_core.runtime import consume
from weave_core.runtime.reads import read_history
from weave_core.storage.db import Database
from weave_core.storage.schema import weave_activations, weave_inbox, weave_steps
from weave_sdk import Client, ConflictError, WeaveAPIError

EVIDENCE = {"ticket": "OPS-7", "checked": "the channel's console"}


@pytest.fixture
def any_engine(any_db: Database, plugin_host: PluginHost) -> Engine:
    return make_engine(any_db, plugin_host)


@pytest.fixture
def tenant(any_engine: Engine) -> Tenant:
    return new_tenant(any_engine.db)


@pytest.fixture
def sdk(any_engine: Engine, tenant: Tenant) -> Iterator[Client]:
    """The SDK talking to the app in-process (no socket), as a reviewer and operator."""
    http = client_for(any_engine)
    token = tenant.token(Permission.START, Permission.READ, Permission.CONTROL,
                         Permission.REVIEW)
    with Client("http://testserver", token, tenant.namespace,
                transport=http._transport) as client:
        yield client


def _update(engine: Engine, stmt: Any) -> None:
    engine.db.transaction(lambda c: c.execute(stmt), name="test_update")


def _quarantined(engine: Engine, sdk: Client, doc: dict[str, Any]) -> str:
    """Start ``doc``; step ``a`` succeeds, but its frozen result names another queue."""
    ns = sdk.namespace
    assert ns is not None
    publish(engine, ns, doc)
    wid = sdk.start(doc["definition_id"], {}).workflow_id
    (claimed,) = work(engine, ns, handlers=["a"])
    report(engine, ns, claimed, {"n": 1}, consume=False)
    (row,) = inbox_of(engine, wid)
    snap = exactjson.loads(row.snapshot)
    snap["queue"] = "another-queue"
    i = weave_inbox
    _update(engine, sa.update(i).where(i.c.id == row.id).values(snapshot=exactjson.dumps(snap)))
    assert consume(engine, row.id).code == "queue_mismatch"
    return wid


def _code(call: Any) -> str:
    with pytest.raises(WeaveAPIError) as err:
        call()
    return str(err.value.code)


WAYS = ["recover", "accept", "resolve_failed", "resolve_cancelled", "cancel"]


@pytest.mark.parametrize("way", WAYS)
def test_a_quarantined_step_is_in_review_with_every_way_out(
    any_engine: Engine, sdk: Client, way: str,
) -> None:
    engine = any_engine
    wid = _quarantined(engine, sdk, definition("qr", [task("a"), task("b")]))
    handle = sdk.get_workflow_handle(wid)
    view = handle.describe()
    assert view.status == "NEEDS_REVIEW" and view.review_reason == "quarantined_result"
    a = view.step("a")
    assert (a.phase, a.reason) == ("NEEDS_REVIEW", "quarantined_result")
    assert [s["step_id"] for s in view.review["blocking_steps"]] == ["a"]
    # "continue" would leave the instance running with nothing running
    assert _code(lambda: handle.resolve(reason="looks fine")) == "review_blocked"
    assert _code(lambda: handle.recover("a", reason="again")) == "evidence_required"
    ns = sdk.namespace
    assert ns is not None
    if way == "recover":
        handle.conclude("a", "effect_confirmed_absent", reason="no effect", evidence=EVIDENCE)
        out = handle.recover("a", reason="re-run it")
        assert out.workflow.status == "RUNNING"
        (again,) = work(engine, ns, handlers=["a"])
        report(engine, ns, again, {"n": 2})
        report(engine, ns, work(engine, ns, handlers=["b"])[0], {})
        assert handle.describe().status == "SUCCEEDED"
    elif way == "accept":
        out = handle.accept("a", {"n": 1}, reason="the result is right", evidence=EVIDENCE)
        assert out.workflow.status == "RUNNING"
        assert out.operation["kind"] == "review.accept"
        assert out.operation["conclusion"] == "effect_confirmed_present"
        report(engine, ns, work(engine, ns, handlers=["b"])[0], {})
        done = handle.describe()
        assert done.status == "SUCCEEDED" and done.step("a").output == {"n": 1}
        row = inbox_of(engine, wid)[0]  # the quarantined row and its snapshot stay as they were
        assert row.state == "QUARANTINED"
        assert exactjson.loads(row.snapshot)["queue"] == "another-queue"
    elif way == "resolve_failed":
        assert _code(lambda: handle.resolve(reason="give up", outcome="failed")) \
            == "effect_unknown"
        handle.conclude("a", "effect_confirmed_present", reason="it ran", evidence=EVIDENCE)
        assert handle.resolve(reason="give up", outcome="failed").workflow.status == "FAILED"
    elif way == "resolve_cancelled":
        handle.conclude("a", "effect_confirmed_absent", reason="no effect", evidence=EVIDENCE)
        out = handle.resolve(reason="not needed", outcome="cancelled")
        assert out.workflow.status == "CANCELLED"
    else:
        assert handle.cancel(reason="stop it").status == "NEEDS_REVIEW"
        stopped = handle.describe()
        assert stopped.cancel_requested
        assert stopped.step("a").phase == "NEEDS_REVIEW"  # never CANCELLED: its task ran
        assert _code(lambda: handle.resolve(reason="go on")) == "cancel_requested"
        handle.conclude("a", "effect_confirmed_present", reason="it ran", evidence=EVIDENCE)
        out = handle.resolve(reason="stopped", outcome="cancelled")
        assert out.workflow.status == "CANCELLED"
    final = handle.describe()
    assert final.status in ("SUCCEEDED", "FAILED", "CANCELLED")
    if final.status != "SUCCEEDED":  # the step keeps what happened to it: it was never cancelled
        assert final.step("a").phase == "NEEDS_REVIEW"


def test_no_operation_leaves_an_active_step_without_work(
    any_engine: Engine, sdk: Client,
) -> None:
    """An ACTIVE step whose task settled and whose result will never be consumed (as a
    quarantine left it before issue 12): leaving review is refused, nothing commits."""
    engine = any_engine
    wid = _quarantined(engine, sdk, definition("dead", [task("a"), task("b")]))
    s, a = weave_steps, weave_activations
    _update(engine, sa.update(s).where(s.c.instance_id == wid, s.c.step_id == "a")
            .values(phase="ACTIVE", reason=None))
    _update(engine, sa.update(a).where(a.c.instance_id == wid, a.c.step_id == "a")
            .values(state="ACTIVE", reason=None))
    handle = sdk.get_workflow_handle(wid)
    revision = instance(engine, wid).revision
    with pytest.raises(ConflictError) as err:
        handle.resolve(reason="continue")
    assert err.value.code == "no_active_work"
    assert err.value.problem["steps"] == ["a"]
    assert instance(engine, wid).revision == revision
    assert instance(engine, wid).status == "NEEDS_REVIEW"
    out = handle.cancel(reason="end it")  # cancel remains a way out
    assert out.status == "CANCELLED"


def _reference(with_schema: bool = True) -> dict[str, Any]:
    submit = _unsafe("submit", output_schema={
        "type": "object", "required": ["job_id"],
        "properties": {"job_id": {"type": "string"}}} if with_schema else None)
    if submit["output_schema"] is None:
        del submit["output_schema"]
    return definition("ref", [
        task("prepare"), submit,
        task("record", inp={"job": {"$ref": "steps.submit.output.job_id"}})])


def test_lost_lease_submit_concluded_present_with_its_output_completes(
    any_engine: Engine, sdk: Client,
) -> None:
    """The reference scenario's review case: ``submit`` lost its lease, but the channel
    took the job; the reviewer records the job it shows, and the workflow goes on."""
    engine = any_engine
    ns = sdk.namespace
    assert ns is not None
    publish(engine, ns, _reference())
    handle = sdk.start("ref", {})
    wid = handle.workflow_id
    report(engine, ns, work(engine, ns, handlers=["prepare"])[0], {})
    lost = _lose_lease(engine, ns, "submit")
    view = handle.describe()
    assert view.status == "NEEDS_REVIEW" and view.step("submit").reason == "effect_unknown"
    handle.conclude("submit", "effect_confirmed_present", reason="job J-1 exists",
                    evidence=EVIDENCE)
    assert _code(lambda: handle.recover("submit", reason="again")) == "effect_present"
    with pytest.raises(WeaveAPIError) as bad:
        handle.accept("submit", {"job": 7}, reason="typo", evidence=EVIDENCE)
    assert (bad.value.status, bad.value.code) == (422, "output_contract_violated")
    assert _code(lambda: handle.accept("submit", {"job_id": "J-1"}, reason="x",
                                       evidence={})) == "validation_failed"
    out = handle.accept("submit", {"job_id": "J-1"}, reason="the channel shows job J-1",
                        evidence=EVIDENCE, operation_id="acc-1")
    assert out.workflow.status == "RUNNING"
    again = handle.accept("submit", {"job_id": "J-1"}, reason="the channel shows job J-1",
                          evidence=EVIDENCE, operation_id="acc-1")
    assert again.operation == out.operation  # a repeat replays the first outcome
    (record,) = work(engine, ns, handlers=["record"])
    assert record.input == {"job": "J-1"}
    report(engine, ns, record, {})
    done = handle.describe()
    assert done.status == "SUCCEEDED"
    assert (done.step("submit").output, done.step("submit").reason) == (
        {"job_id": "J-1"}, "result_accepted")
    # the original records are untouched: the task stays as its lease loss left it
    task_row = next(t for t in tasks_of(engine, wid) if t.task_id == lost.task_id)
    assert task_row.status == "NEEDS_REVIEW" and bool(task_row.effect_unknown)
    act = next(x for x in activations(engine, wid) if x.step_id == "submit")
    assert (act.state, act.reason) == ("SUCCEEDED", "result_accepted")
    items, _more = read_history(engine.db, ns, wid, limit=500)
    reviewed = [t for t in items if t["kind"] == "step.succeeded" and t["step_id"] == "submit"]
    assert reviewed and reviewed[0]["details"]["reviewed"] is True
    assert reviewed[0]["details"]["evidence"] == EVIDENCE
    assert steps(engine, wid)["record"].phase == "SUCCEEDED"


def test_accept_refusals(any_engine: Engine, sdk: Client, tenant: Tenant) -> None:
    engine = any_engine
    ns = sdk.namespace
    assert ns is not None
    publish(engine, ns, definition("acc", [task("a"), task("b")]))
    handle = sdk.start("acc", {})
    body = {"action": "accept", "operation_id": "acc-x", "reason": "r", "step_id": "a",
            "expected_state_version": 1, "output": {}, "evidence": EVIDENCE}
    http = client_for(engine)
    url = f"/v1/namespaces/{ns}/workflows/{handle.workflow_id}/review"
    denied = http.post(url, json=body, headers=tenant.headers(Permission.CONTROL))
    assert denied.status_code == 403  # accepting a result takes the review permission
    missing = http.post(url, json={k: v for k, v in body.items() if k != "output"},
                        headers=tenant.headers(Permission.REVIEW))
    assert missing.status_code == 422 and missing.json()["code"] == "validation_failed"
    assert _code(lambda: handle.accept("a", {}, reason="r", evidence=EVIDENCE)) \
        == "not_in_review"
    report(engine, ns, work(engine, ns, handlers=["a"])[0], fail=True)
    assert _code(lambda: handle.accept("a", {}, reason="r", evidence=EVIDENCE,
                                       expected_state_version=0)) == "state_version_conflict"
    # a FAILED step is recovered or ends the instance: its result is not accepted
    assert _code(lambda: handle.accept("a", {}, reason="r", evidence=EVIDENCE)) \
        == "step_not_acceptable"
    assert _code(lambda: handle.accept("nope", {}, reason="r", evidence=EVIDENCE,
                                       expected_state_version=1)) == "step_not_found"
