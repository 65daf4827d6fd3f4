"""Signals (R-7.1 to R-7.3): acceptance, idempotency, matching, early signals, limits,
expiry, timeouts and the boundary rule (accepted_at <= deadline_at is on time)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from tests.runtime.helpers import (
    audit_of,
    definition,
    instance,
    new_namespace,
    publish,
    report,
    start,
    steps,
    task,
    transitions_of,
    work,
)
from tests.waits.helpers import (
    due_rows,
    send,
    set_wait,
    signal_step,
    signals_of,
    wait_of,
)
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.errors import NotFoundError, ValidationError
from weave_core.runtime import run_pending, run_tick
from weave_core.runtime.waits.declared import SignalNotDeclaredError
from weave_core.runtime.waits.signal_expiry import expire_signals
from weave_core.runtime.waits.signals import (
    SignalBacklogFullError,
    SignalConflictError,
    SignalPayloadTooLargeError,
    SignalRequest,
    WorkflowSettledError,
    accept_signal,
)
from weave_core.storage.db import set_clock_offset


def _waiting(engine: Engine, *, timeout: int | None = None, first: bool = False
             ) -> tuple[str, str]:
    """An instance waiting on ``approval`` for job-1 (after task ``a`` when ``first``)."""
    ns = new_namespace(engine)
    steps_ = ([task("a")] if first else []) + [signal_step("approval", timeout=timeout),
                                                task("after")]
    publish(engine, ns, definition("sig", steps_))
    return ns, start(engine, ns, "sig", {"job": "job-1"}).instance.instance_id


def test_a_signal_for_the_open_wait_is_consumed_and_the_next_task_is_claimable(
    engine: Engine,
) -> None:
    ns, wid = _waiting(engine)
    assert instance(engine, wid).status == "WAITING"
    acc = send(engine, ns, wid, payload={"approved": True, "amount": Decimal("10.10")})
    assert acc.created and acc.signal.state == "ACCEPTED"  # accepted: durably saved
    assert acc.signal.accepted_by == "token:signaller"
    (sig,) = signals_of(engine, wid)
    wait = wait_of(engine, wid, "approval")
    assert sig.state == "CONSUMED" and sig.consumed_by_activation_id == wait.activation_id
    assert wait.state == "SATISFIED" and wait.winner == "signal"
    assert wait.winner_ref == acc.signal.signal_id
    assert exactjson.loads(steps(engine, wid)["approval"].output) == {
        "approved": True, "amount": Decimal("10.10")}
    (claimed,) = work(engine, ns, handlers=["after"])
    assert claimed.handler == "after"
    kinds = [t.kind for t in transitions_of(engine, wid)]
    assert kinds.index("signal.accepted") < kinds.index("signal.consumed")
    actions = [a.action for a in audit_of(engine, wid)]
    assert "workflow.signal.accepted" in actions


def test_an_early_signal_is_stored_and_consumed_when_the_wait_opens(engine: Engine) -> None:
    ns, wid = _waiting(engine, first=True)
    acc = send(engine, ns, wid)
    assert acc.pending_id is None  # no wait open yet: stored, unbound
    (sig,) = signals_of(engine, wid)
    assert sig.state == "ACCEPTED" and sig.target_activation_id is None
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, {})
    assert steps(engine, wid)["approval"].phase == "ACTIVE"
    run_tick(engine)  # the SIGNAL row made due when the wait opened
    assert signals_of(engine, wid)[0].state == "CONSUMED"
    assert steps(engine, wid)["approval"].phase == "SUCCEEDED"


def test_same_id_and_content_returns_the_original_acceptance(engine: Engine) -> None:
    ns, wid = _waiting(engine, first=True)
    first = send(engine, ns, wid, signal_id="s-1", payload={"n": 1})
    set_clock_offset(engine.db, 5)
    again = send(engine, ns, wid, signal_id="s-1", payload={"n": 1})
    assert first.created and not again.created
    assert again.signal.accepted_at == first.signal.accepted_at
    with pytest.raises(SignalConflictError) as err:
        send(engine, ns, wid, signal_id="s-1", payload={"n": 2})
    assert err.value.code == "signal_conflict"
    assert len(signals_of(engine, wid)) == 1


def test_an_unknown_instance_is_not_found_and_nothing_is_stored(engine: Engine) -> None:
    ns, wid = _waiting(engine)
    other = new_namespace(engine)
    with pytest.raises(NotFoundError):
        send(engine, ns, "wf_missing", signal_id="lost-1")
    with pytest.raises(NotFoundError):  # another namespace's instance is invisible
        send(engine, other, wid, signal_id="lost-2")
    assert signals_of(engine, wid) == [] and signals_of(engine, "wf_missing") == []


def test_only_name_key_and_version_of_this_business_operation_match(engine: Engine) -> None:
    ns, wid = _waiting(engine)
    send(engine, ns, wid, key="job-2")  # another business operation
    with pytest.raises(SignalNotDeclaredError):  # no step declares it (#12): not stored
        send(engine, ns, wid, name="rejection")
    with pytest.raises(SignalNotDeclaredError):  # declared with param_version "1" only
        send(engine, ns, wid, param_version="2")
    assert steps(engine, wid)["approval"].phase == "ACTIVE"
    assert [s.state for s in signals_of(engine, wid)] == ["ACCEPTED"]
    assert all(s.target_activation_id is None for s in signals_of(engine, wid))
    send(engine, ns, wid)
    assert steps(engine, wid)["approval"].phase == "SUCCEEDED"


def test_one_wait_consumes_exactly_one_matching_signal(engine: Engine) -> None:
    ns, wid = _waiting(engine, first=True)
    send(engine, ns, wid, payload={"n": 1}, signal_id="e1")
    send(engine, ns, wid, payload={"n": 2}, signal_id="e2")
    (a,) = work(engine, ns, handlers=["a"])
    report(engine, ns, a, {})
    run_tick(engine)
    states = {s.signal_id: s.state for s in signals_of(engine, wid)}
    assert states == {"e1": "CONSUMED", "e2": "ACCEPTED"}  # the oldest; no broadcast
    assert exactjson.loads(steps(engine, wid)["approval"].output) == {"n": 1}


def test_a_second_signal_for_a_satisfied_wait_loses_and_never_advances(engine: Engine) -> None:
    ns, wid = _waiting(engine)
    first = send(engine, ns, wid, signal_id="w1", deliver=False)
    second = send(engine, ns, wid, signal_id="w2", deliver=False)
    assert first.pending_id == second.pending_id  # one SIGNAL row per wait
    run_tick(engine)
    states = {s.signal_id: (s.state, s.reason) for s in signals_of(engine, wid)}
    assert states == {"w1": ("CONSUMED", None), "w2": ("LOST", "wait_already_settled")}
    lost = [t for t in transitions_of(engine, wid) if t.kind == "wait.race_lost"]
    assert [t.reason for t in lost] == ["wait_already_settled"]
    assert len(work(engine, ns, handlers=["after"])) == 1


def test_limits_backlog_payload_and_settled_instances(limited: Engine, engine: Engine) -> None:
    ns, wid = _waiting(limited, first=True)
    send(limited, ns, wid, key="x1")
    send(limited, ns, wid, key="x2")
    with pytest.raises(SignalBacklogFullError) as err:
        send(limited, ns, wid, key="x3")
    assert err.value.code == "signal_backlog_full"
    with pytest.raises(SignalPayloadTooLargeError):
        send(limited, ns, wid, signal_id="big", payload="x" * (limited.limits.max_value_bytes + 1))
    with pytest.raises(ValidationError):
        accept_signal(limited, ns, wid, SignalRequest("bad id!", "approval", "k"), actor="t")
    with pytest.raises(ValidationError):
        accept_signal(limited, ns, wid, SignalRequest("ok-id", "approval", ""), actor="t")
    assert len(signals_of(limited, wid)) == 2
    ns2, done = _waiting(engine)
    send(engine, ns2, done, signal_id="done-1")
    (after,) = work(engine, ns2, handlers=["after"])
    report(engine, ns2, after, {})
    assert instance(engine, done).status == "SUCCEEDED"
    with pytest.raises(WorkflowSettledError):
        send(engine, ns2, done, signal_id="done-2")
    assert send(engine, ns2, done, signal_id="done-1").created is False  # replay still works


def test_retention_expires_unmatched_signals_observably(limited: Engine) -> None:
    ns, wid = _waiting(limited, first=True)
    send(limited, ns, wid, key="never-matched", signal_id="old")
    set_clock_offset(limited.db, 30)
    assert expire_signals(limited).expired == 0
    set_clock_offset(limited.db, 61)
    report_ = expire_signals(limited)
    assert report_.expired >= 1
    (sig,) = signals_of(limited, wid)
    assert sig.state == "EXPIRED" and sig.reason == "retention_expired"
    assert [t.kind for t in transitions_of(limited, wid)][-1] == "signal.expired"
    assert audit_of(limited, wid)[-1].action == "workflow.signal.expired"
    assert expire_signals(limited).expired == 0  # counted once


def test_a_signal_bound_to_an_open_wait_is_never_expired(limited: Engine) -> None:
    ns, wid = _waiting(limited)
    send(limited, ns, wid, deliver=False)
    set_clock_offset(limited.db, 61)
    result = expire_signals(limited)
    assert result.kept >= 1
    assert signals_of(limited, wid)[0].state == "ACCEPTED"
    run_tick(limited)
    assert signals_of(limited, wid)[0].state == "CONSUMED"


def test_the_timeout_wins_when_no_signal_came(engine: Engine) -> None:
    ns, wid = _waiting(engine, timeout=60)
    set_clock_offset(engine.db, 59)
    run_tick(engine)
    assert steps(engine, wid)["approval"].phase == "ACTIVE"
    set_clock_offset(engine.db, 61)
    run_tick(engine)
    wait = wait_of(engine, wid, "approval")
    assert wait.state == "TIMED_OUT" and wait.winner == "timeout"
    assert steps(engine, wid)["approval"].phase == "FAILED"
    assert steps(engine, wid)["approval"].reason == "signal_timed_out"
    row = instance(engine, wid)
    assert row.status == "NEEDS_REVIEW" and row.review_reason == "signal_timed_out"
    late = send(engine, ns, wid, signal_id="too-late")  # stored, but never advances
    assert late.signal.state == "ACCEPTED" and late.pending_id is None
    assert work(engine, ns, handlers=["after"]) == []


def test_boundary_accepted_exactly_at_the_deadline_is_on_time(engine: Engine) -> None:
    ns, wid = _waiting(engine, timeout=60)
    acc = send(engine, ns, wid, deliver=False)  # accepted, not yet consumed
    wait = wait_of(engine, wid, "approval")
    set_wait(engine, wait.activation_id, deadline_at=acc.signal.accepted_at)  # t == deadline
    set_clock_offset(engine.db, 120)  # the deadline row runs before the signal's own row
    (timer,) = due_rows(engine, wid, "TIMER")
    run_pending(engine, int(timer.id))
    wait = wait_of(engine, wid, "approval")
    assert wait.state == "SATISFIED" and wait.winner == "signal"
    assert steps(engine, wid)["approval"].phase == "SUCCEEDED"
    lost = [t for t in transitions_of(engine, wid) if t.kind == "wait.race_lost"]
    assert [t.reason for t in lost] == ["timeout_after_signal"]


def test_boundary_accepted_after_the_deadline_loses_to_the_timeout(engine: Engine) -> None:
    ns, wid = _waiting(engine, timeout=60)
    acc = send(engine, ns, wid, deliver=False)
    wait = wait_of(engine, wid, "approval")
    set_wait(engine, wait.activation_id,
             deadline_at=acc.signal.accepted_at - timedelta(microseconds=1))
    run_tick(engine)  # the SIGNAL row is due first: the deadline already passed
    wait = wait_of(engine, wid, "approval")
    assert wait.state == "TIMED_OUT"
    (sig,) = signals_of(engine, wid)
    assert sig.state == "LOST" and sig.reason == "signal_after_deadline"
    assert steps(engine, wid)["approval"].phase == "FAILED"
