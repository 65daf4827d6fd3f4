"""End to end on MariaDB: a real ``weave serve``, SDK workers in threads, the SDK client.

Issue 5 "Tests that must exist": sequential tasks, a branch on an exact decimal, a parallel
with a join, nested composites, a definition larger than one budget, a task failure under
REVIEW; and the public contract of start (idempotency, validation), list and history.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from tests.e2e import scenarios
from tests.e2e.conftest import E2E
from tests.e2e.scenarios import RESULT_TIMEOUT, task, workflow
from weave_sdk import AsyncClient, ConflictError, Handler, NotFoundError, ValidationError
from weave_sdk.workflows import WorkflowStatus, WorkflowTimeoutError

pytestmark = pytest.mark.mysql


def test_sequential_tasks_succeed_and_result_returns_the_output(e2e: E2E) -> None:
    scenarios.sequence(e2e)


def test_branch_on_an_exact_decimal(e2e: E2E) -> None:
    scenarios.branch_on_decimal(e2e)


def test_parallel_with_a_join_reads_sibling_outputs_by_name(e2e: E2E) -> None:
    scenarios.parallel_join(e2e)


def test_nested_composites(e2e: E2E) -> None:
    scenarios.nested(e2e)


def test_a_definition_larger_than_one_budget_continues_from_checkpoints(e2e: E2E) -> None:
    scenarios.wide_parallel(e2e)


def test_skipping_more_than_one_budget_continues_from_checkpoints(e2e: E2E) -> None:
    scenarios.long_skip(e2e)


def test_a_task_failure_under_review_sends_the_instance_to_review(e2e: E2E) -> None:
    view = scenarios.failure_to_review(e2e)
    listed = list(e2e.client.list_workflows(status="NEEDS_REVIEW"))
    assert [w.workflow_id for w in listed] == [view.workflow_id]


def test_the_async_client_starts_and_waits(e2e: E2E) -> None:
    wf = workflow("e2e-async")
    wf.task("only", queue="e2e", handler=Handler("echo", "1"), input={"x": Decimal("0.1")})
    e2e.publish(wf)

    async def run() -> tuple[object, object, int]:
        async with AsyncClient(e2e.base_url, e2e.token, e2e.namespace) as client:
            handle = await client.start("e2e-async", {}, idempotency_key="async-1")
            output = await handle.result(timeout=RESULT_TIMEOUT)
            view = await handle.describe()
            events = await handle.history()
            listed = [w async for w in client.list_workflows(definition_id="e2e-async")]
            assert [w.workflow_id for w in listed] == [handle.workflow_id]
            return output, view.status, len(events)

    with e2e.worker():
        output, status, count = asyncio.run(run())
    assert output == {"x": Decimal("0.1")}
    assert status is WorkflowStatus.SUCCEEDED and count >= 4


# --- start: idempotency and validation ----------------------------------------------------


def test_start_is_idempotent_on_the_key(e2e: E2E) -> None:
    wf = workflow("e2e-idem", schema={"type": "object", "required": ["amount"],
                                      "properties": {"amount": {"type": "number"}}})
    wf.add(task("parked", "noop", queue="nobody-serves-this"))
    e2e.publish(wf)
    first = e2e.client.start("e2e-idem", {"amount": Decimal("1.10")}, idempotency_key="k-1")
    again = e2e.client.start("e2e-idem", {"amount": Decimal("1.10")}, idempotency_key="k-1")
    assert first.created is True and again.created is False
    assert again.workflow_id == first.workflow_id
    assert again.started == first.started or again.started is not None
    with pytest.raises(ConflictError) as conflict:
        e2e.client.start("e2e-idem", {"amount": Decimal("1.11")}, idempotency_key="k-1")
    assert conflict.value.status == 409 and conflict.value.code == "idempotency_conflict"
    # the same key in another operation type is another identity
    other = e2e.client.start("e2e-idem", {"amount": 2}, idempotency_key="k-1",
                             operation_type="import")
    assert other.created is True and other.workflow_id != first.workflow_id
    # no key: a fresh uuid4 each time, so two calls are two instances
    a = e2e.client.start("e2e-idem", {"amount": 3})
    b = e2e.client.start("e2e-idem", {"amount": 3})
    assert a.workflow_id != b.workflow_id
    assert a.started is not None and len(a.started.idempotency_key) == 32


def test_start_validation(e2e: E2E) -> None:
    wf = workflow("e2e-valid", schema={"type": "object", "required": ["amount"],
                                       "properties": {"amount": {"type": "number"}}})
    wf.add(task("parked", "noop", queue="nobody-serves-this"))
    e2e.publish(wf)
    with pytest.raises(NotFoundError) as missing:
        e2e.client.start("no-such-definition", {})
    assert missing.value.status == 404
    with pytest.raises(NotFoundError):
        e2e.client.start("e2e-valid", {"amount": 1}, version="9")
    with pytest.raises(ValidationError) as bad:
        e2e.client.start("e2e-valid", {"amount": "lots"})
    assert bad.value.status == 422
    assert [p.path for p in bad.value.problems] == ["$.input.amount"]
    with pytest.raises(ValidationError) as absent:
        e2e.client.start("e2e-valid", {})
    assert absent.value.problems and absent.value.problems[0].path.startswith("$.input")
    assert list(e2e.client.list_workflows()) == []  # nothing was created


# --- list and history ------------------------------------------------------------------------


def test_list_filters_and_cursor_pagination(e2e: E2E) -> None:
    done = workflow("e2e-list-done")
    done.add(task("quick", "noop"))
    parked = workflow("e2e-list-parked")
    parked.add(task("parked", "noop", queue="nobody-serves-this"))
    e2e.publish(done)
    e2e.publish(parked)
    before = datetime.now(UTC) - timedelta(minutes=5)
    with e2e.worker():
        finished = [e2e.client.start("e2e-list-done", {"i": i}) for i in range(3)]
        for handle in finished:
            handle.result(timeout=RESULT_TIMEOUT)
    running = []
    for i in range(4):
        running.append(e2e.client.start("e2e-list-parked", {"i": i}))
        time.sleep(0.002)  # distinct creation times make "newest first" observable
    everything = list(e2e.client.list_workflows(page_size=2))
    ids = [w.workflow_id for w in everything]
    assert len(ids) == 7 and len(set(ids)) == 7
    created = [(w.created_at, w.workflow_id) for w in everything]
    assert created == sorted(created, reverse=True)  # newest first, id breaks ties
    # pages of 2 through the cursor, by hand
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = e2e.client.list_workflows_page(limit=2, cursor=cursor)
        pages += 1
        seen += [w.workflow_id for w in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == ids and pages == 4
    by_status = {w.workflow_id for w in e2e.client.list_workflows(status="SUCCEEDED")}
    assert by_status == {h.workflow_id for h in finished}
    assert {w.workflow_id for w in e2e.client.list_workflows(
        status=WorkflowStatus.RUNNING, definition_id="e2e-list-parked", version="1",
        paused=False)} == {h.workflow_id for h in running}
    assert list(e2e.client.list_workflows(paused=True)) == []
    assert list(e2e.client.list_workflows(version="2")) == []
    assert list(e2e.client.list_workflows(definition_id="nope")) == []
    # created range: everything is after `before`; nothing is before it
    assert len(list(e2e.client.list_workflows(created_after=before))) == 7
    assert list(e2e.client.list_workflows(created_before=before)) == []
    newest = everything[0]
    only_newest = list(e2e.client.list_workflows(created_after=newest.created_at))
    assert newest.workflow_id in {w.workflow_id for w in only_newest}
    assert len(list(e2e.client.list_workflows(created_before=newest.created_at))) < 7
    with pytest.raises(ValidationError):
        e2e.client.list_workflows_page(cursor="not-a-cursor!")


def test_history_is_ordered_by_revision_and_pages(e2e: E2E) -> None:
    wf = workflow("e2e-hist")
    for i in range(4):
        wf.add(task(f"t{i}", "noop"))
    e2e.publish(wf)
    with e2e.worker():
        handle = e2e.client.start("e2e-hist", {})
        handle.result(timeout=RESULT_TIMEOUT)
    events = handle.history()
    assert [e.revision for e in events] == list(range(1, len(events) + 1))
    paged = []
    after = 0
    while True:
        page = e2e.client.history_page(handle.workflow_id, after=after, limit=3)
        assert len(page.items) <= 3
        paged += page.items
        if page.next_cursor is None:
            break
        after = page.next_cursor
    assert paged == events
    actions = [e.audit.action for e in events if e.audit is not None]
    assert actions[0] == "workflow.started"
    activated = [e.step_id for e in events if e.kind == "step.activated"]
    assert activated == ["t0", "t1", "t2", "t3"]
    with pytest.raises(NotFoundError):
        e2e.client.history("wf_does_not_exist")


def test_result_times_out_with_the_last_view(e2e: E2E) -> None:
    wf = workflow("e2e-timeout")
    wf.add(task("parked", "noop", queue="nobody-serves-this"))
    e2e.publish(wf)
    handle = e2e.client.start("e2e-timeout", {})
    started = time.monotonic()
    with pytest.raises(WorkflowTimeoutError) as timeout:
        handle.result(timeout=0.3)
    assert 0.25 <= time.monotonic() - started < 5
    assert timeout.value.workflow.status is WorkflowStatus.RUNNING
    assert timeout.value.workflow_id == handle.workflow_id
    with pytest.raises(NotFoundError):
        e2e.client.get_workflow_handle("wf_missing").describe()
