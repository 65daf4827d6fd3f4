"""Against a real ``weave serve`` on MariaDB: failures that say why, the typed description
after a signal, a poll and a pause, find-by-key (index-served), ``result()`` by long poll
(issue #14 items 4-6, #11 item 4)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.live_server import LiveServer
from weave_core.runtime.reads import ListFilter, list_statement
from weave_core.storage.db import Database
from weave_sdk import (
    Classify,
    Client,
    FailurePolicy,
    NonRetryableError,
    RetryPolicy,
    Workflow,
    WorkflowDescription,
    WorkflowFailedError,
    WorkflowHandle,
    WorkflowNeedsReviewError,
    handler,
    ref,
)
from weave_sdk.worker import Worker


@handler("refuse_card")
def refuse_card(data: dict[str, Any]) -> None:
    raise NonRetryableError(f"card of {data['order_id']} declined", type="card_declined")


def _failing(definition_id: str, policy: FailurePolicy) -> Workflow:
    wf = Workflow(definition_id, version="1", queue="pay", failure_policy=policy,
                  input_schema={"type": "object"})
    wf.task("charge", handler=refuse_card, input={"order_id": ref.input("id")},
            retry=RetryPolicy(max_attempts=2))
    return wf


@pytest.mark.parametrize(("policy", "error"), [
    (FailurePolicy.FAIL_AFTER_SETTLED, WorkflowFailedError),
    (FailurePolicy.REVIEW, WorkflowNeedsReviewError),
])
def test_the_error_names_step_handler_attempts_and_message(
    weave_server: LiveServer, policy: FailurePolicy, error: type[Exception],
) -> None:
    base, token, ns = weave_server
    with Client(base, token, ns) as client:
        client.publish(_failing(f"fails-{policy.value.lower()}", policy))
        with Worker(client, queue="pay", handlers=[refuse_card], wait_seconds=1).running():
            handle = client.start(f"fails-{policy.value.lower()}", {"id": "o-9"})
            with pytest.raises(error) as raised:
                handle.result(timeout=30)
    exc = raised.value
    assert exc.step_id == "charge"  # type: ignore[attr-defined]
    assert (exc.handler, exc.handler_version) == ("refuse_card", "1")  # type: ignore[attr-defined]
    assert exc.attempts_used == 1 and exc.max_attempts == 2  # type: ignore[attr-defined]
    assert exc.error_type == "card_declined"  # type: ignore[attr-defined]
    assert exc.error_message == "card of o-9 declined"  # type: ignore[attr-defined]
    assert "step 'charge'" in str(exc) and "card of o-9 declined" in str(exc)
    if policy is FailurePolicy.REVIEW:
        assert exc.review_reason == "task_failed"  # type: ignore[attr-defined]


class _CountingHandle(WorkflowHandle):
    """Counts full descriptions read, to tell the long poll from the polling fallback."""

    described = 0

    def describe(self) -> WorkflowDescription:
        self.described += 1
        return super().describe()


@handler("job_status")
def job_status(data: dict[str, Any]) -> dict[str, str]:
    rounds = job_status.__dict__.setdefault("rounds", [])  # type: ignore[attr-defined]
    rounds.append(1)
    return {"status": "RUNNING" if len(rounds) < 2 else "DONE"}


def test_description_after_a_signal_a_poll_and_a_pause(weave_server: LiveServer) -> None:
    base, token, ns = weave_server
    wf = Workflow("waits-shown", version="1", queue="jobs", input_schema={"type": "object"})
    wf.signal("approval", name="approval", correlation_key=ref.input("id"),
              timeout=timedelta(hours=1))
    wf.poll("outcome", handler=job_status, input={"id": ref.input("id")}, max_rounds=5,
            interval=1, deadline=timedelta(minutes=5),
            classify=Classify("status", pending=["RUNNING"], succeeded=["DONE"],
                              failed=["LOST"]))
    with Client(base, token, ns) as client:
        client.publish(wf)
        started = client.start("waits-shown", {"id": "j-1"}, idempotency_key="job-j-1")
        handle = _CountingHandle(client, started.workflow_id)
        stray = handle.signal("approval", correlation_key="someone-else", payload={"ok": 1})
        assert stray.state == "ACCEPTED" and stray.target_activation_id is None
        paused = handle.pause(reason="check the approval first")
        assert paused.paused is True
        handle.resume(reason="checked")
        right = handle.signal("approval", correlation_key="j-1", payload={"ok": True})
        assert right.target_activation_id is not None
        with Worker(client, queue="jobs", handlers=[job_status], wait_seconds=1).running():
            output = handle.result(timeout=30)
        assert output == {"status": "DONE"}
        assert handle.described == 0  # answered by GET .../result, no description read
        view = handle.describe()
    by_key = {s.correlation_key: s for s in view.signals}
    assert by_key["j-1"].state == "CONSUMED" and by_key["someone-else"].state != "CONSUMED"
    assert by_key["j-1"].consumed_by_activation_id == right.target_activation_id
    kinds = {w.step_id: w.kind for w in view.waits}
    assert kinds == {"approval": "signal", "outcome": "poll"}
    assert [r.round for r in view.poll_rounds] == [1, 2]
    assert [r.status for r in view.poll_rounds] == ["PENDING", "SUCCEEDED"]
    assert [o.kind for o in view.operations] == ["pause", "resume"]
    assert view.operations[0]["reason"] == "check the approval first"


def test_find_workflow_by_its_business_key(weave_server: LiveServer) -> None:
    base, token, ns = weave_server
    wf = Workflow("found", version="1", queue="q", input_schema={"type": "object"})
    wf.timer("wait", duration=timedelta(hours=1))
    with Client(base, token, ns) as client:
        client.publish(wf)
        first = client.start("found", {}, idempotency_key="order-77")
        other = client.start("found", {}, idempotency_key="order-77", operation_type="refund")
        found = client.find_workflow("order-77")
        assert found is not None and found.workflow_id == first.workflow_id
        refund = client.find_workflow("order-77", operation_type="refund")
        assert refund is not None and refund.workflow_id == other.workflow_id
        assert client.find_workflow("order-78") is None
        with pytest.raises(ValueError):
            client.find_workflow("")
    answer = httpx.get(f"{base}/v1/namespaces/{ns}/workflows?operation_type=refund",
                       headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 422
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["problems"][0]["path"] == "$.operation_type"


def test_the_key_filter_is_served_by_primary_keys(weave_server: LiveServer) -> None:
    base, token, ns = weave_server
    wf = Workflow("explained", version="1", queue="q", input_schema={"type": "object"})
    wf.timer("wait", duration=timedelta(hours=1))
    with Client(base, token, ns) as client:
        client.publish(wf)
        for n in range(3):
            client.start("explained", {}, idempotency_key=f"order-{n}")
    db: Database = weave_server.db
    stmt = list_statement(ns, ListFilter(idempotency_key="order-1"), None, 50)
    compiled = stmt.compile(db.engine, compile_kwargs={"literal_binds": True})
    plan = [dict(r._mapping) for r in db.read(
        lambda conn: conn.execute(sa.text(f"EXPLAIN {compiled}")).all())]
    tables = {str(p["table"]): p for p in plan}
    assert set(tables) >= {"weave_instances", "weave_idempotency"}, plan
    for name in ("weave_instances", "weave_idempotency"):
        assert tables[name]["key"] == "PRIMARY", plan
        assert str(tables[name]["type"]) in ("const", "eq_ref", "ref"), plan


def test_async_result_long_polls_and_says_why(weave_server: LiveServer) -> None:
    import asyncio

    from weave_sdk import AsyncClient

    base, token, ns = weave_server
    with Client(base, token, ns) as client:
        client.publish(_failing("fails-async", FailurePolicy.FAIL_AFTER_SETTLED))
        with Worker(client, queue="pay", handlers=[refuse_card], wait_seconds=1).running():
            started = client.start("fails-async", {"id": "o-7"})

            async def wait() -> BaseException:
                async with AsyncClient(base, token, ns) as aclient:
                    try:
                        await aclient.get_workflow_handle(started.workflow_id).result(30)
                    except WorkflowFailedError as exc:
                        return exc
                raise AssertionError("the instance did not fail")

            exc = asyncio.run(wait())
    assert isinstance(exc, WorkflowFailedError)
    assert exc.step_id == "charge" and exc.error_type == "card_declined"
