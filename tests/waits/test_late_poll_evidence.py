"""A poll round's attempt that answers after the poll deadline is collected as evidence, with
its content, on its round in the instance view, and never clears the review (issue 12
item 3; R-7.5). Through the HTTP worker route and the SDK's typed view, on MariaDB."""

from __future__ import annotations

import io
import secrets
from typing import Any

import sqlalchemy as sa

from tests.http.conftest import client_for, new_tenant
from tests.runtime.helpers import definition, publish, task, work
from tests.waits.helpers import poll_step
from weave_core.access.identity import Permission
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.runtime import consume_task_results, run_tick
from weave_core.storage.db import set_clock_offset
from weave_core.storage.schema import weave_task_events
from weave_http.cli.views import render_waits
from weave_sdk import Client
from weave_sdk.views import LateReport


def _complete(http: Any, ns: str, headers: dict[str, str], claimed: Any, output: Any) -> Any:
    return http.post(f"/v1/namespaces/{ns}/tasks/{claimed.task_id}/complete", headers=headers,
                     json={"attempt_id": claimed.attempt_id, "outcome": "succeeded",
                           "output": output})


def test_a_late_poll_answer_is_kept_on_its_round_and_never_clears_the_review(
    engine: Engine,
) -> None:
    tenant = new_tenant(engine.db)
    ns = tenant.namespace
    publish(engine, ns, definition("late", [poll_step(rounds=10, interval=30, deadline=30),
                                            task("after")]))
    http = client_for(engine)
    token = tenant.token(Permission.START, Permission.READ, Permission.REVIEW)
    with Client("http://testserver", token, ns, transport=http._transport) as sdk:
        handle = sdk.start("late", {"job": "job-1"}, idempotency_key=secrets.token_hex(6))
        (claimed,) = work(engine, ns, handlers=["job_status"])  # authorised before the deadline
        set_clock_offset(engine.db, 31)
        try:
            run_tick(engine)  # the deadline: review with the last known result
            view = handle.describe()
            assert view.status == "NEEDS_REVIEW" and view.step("outcome").reason == \
                "poll_exhausted"
            answer = _complete(http, ns, tenant.headers(Permission.WORK), claimed,
                               {"status": "DONE", "receipt": "R-9"})
            assert answer.status_code == 409, answer.text
            assert answer.json()["code"] in ("lease_expired", "attempt_superseded")
            consume_task_results(engine, ns, claimed.task_id)  # the expiry's own result
            run_tick(engine)
        finally:
            set_clock_offset(engine.db, 0)
        view = handle.describe()
        # never clears the review, never advances
        assert view.status == "NEEDS_REVIEW" and view.review_reason == "poll_exhausted"
        assert "after" not in [s.step_id for s in view.steps]  # never activated
        assert work(engine, ns, handlers=["after"]) == []
        (round1,) = view.poll_rounds
        assert round1.state == "LATE" and round1.task_id == claimed.task_id
        (late,) = round1.late_reports
        assert isinstance(late, LateReport)
        assert late.attempt_id == claimed.attempt_id
        assert late.reason in ("lease_expired", "attempt_superseded")
        assert (late.outcome, late.output) == ("succeeded", {"status": "DONE", "receipt": "R-9"})
        assert late.report_hash and late.reported_at is not None
        # and in `weave show`
        shown = io.StringIO()
        render_waits(view, shown)
        assert "late poll answers (evidence only)" in shown.getvalue()
        assert "R-9" in shown.getvalue() and claimed.attempt_id in shown.getvalue()
        # the same over plain HTTP
        raw = http.get(f"/v1/namespaces/{ns}/workflows/{handle.workflow_id}",
                       headers=tenant.headers(Permission.READ)).json()
        assert raw["poll_rounds"][0]["late_reports"][0]["output"]["receipt"] == "R-9"


def test_a_superseded_attempts_report_keeps_its_content(engine: Engine) -> None:
    """A report of an attempt that no longer holds its task (here: its lease expired and the
    task was retried) is refused, and its content is kept on the task's events."""
    from weave_core.dispatch import sweep_expired_leases

    tenant = new_tenant(engine.db)
    ns = tenant.namespace
    publish(engine, ns, definition("sup", [task("a")]))
    http = client_for(engine)
    http.post(f"/v1/namespaces/{ns}/workflows", headers=tenant.headers(Permission.START),
              json={"definition_id": "sup", "input": {}, "idempotency_key": "s-1"})
    (first,) = work(engine, ns, handlers=["a"])
    set_clock_offset(engine.db, 3600)
    try:
        sweep_expired_leases(engine)  # idempotent: retried under a new attempt
    finally:
        set_clock_offset(engine.db, 0)
    answer = _complete(http, ns, tenant.headers(Permission.WORK), first, {"late": 1})
    assert answer.status_code == 409 and answer.json()["code"] == "attempt_superseded"
    e = weave_task_events
    payloads = engine.db.read(lambda c: c.execute(
        sa.select(e.c.payload).where(e.c.task_id == first.task_id,
                                     e.c.event_type == "task.report_refused")).scalars().all())
    (payload,) = [exactjson.loads(p) for p in payloads]
    assert payload["reason"] == "attempt_superseded"
    assert payload["report"] == {"outcome": "succeeded", "output": {"late": 1}, "error": None}
