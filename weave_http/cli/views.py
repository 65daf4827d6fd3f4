"""What ``weave show`` prints beyond steps and tasks — signals, waits, poll rounds,
operations — and the lines that say why a workflow failed (``weave start --wait``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from weave_http.cli.values import _cell, _when, table

if TYPE_CHECKING:
    from weave_sdk.outcomes import WorkflowError
    from weave_sdk.views import (
        HistoryTaskEvent,
        OperationInfo,
        PollRoundInfo,
        SignalInfo,
        WaitInfo,
    )
    from weave_sdk.workflows import WorkflowDescription


def signal_match(signal: SignalInfo) -> str:
    """Consumed, matched an open wait, or stored unmatched (and why it may stay so)."""
    if signal.state == "CONSUMED":
        return f"consumed by {signal.consumed_by_activation_id}"
    if signal.state in ("LOST", "EXPIRED"):
        return f"{signal.state.lower()} ({signal.reason or '-'})"
    if signal.target_activation_id is not None:
        return f"matched the open wait {signal.target_activation_id}"
    return (f"stored unmatched: no open wait for {signal.name!r} with key "
            f"{signal.correlation_key!r} (yet)")


def render_signals(signals: Sequence[SignalInfo], out: TextIO) -> None:
    table(["SIGNAL", "NAME", "KEY", "STATE", "ACCEPTED", "MATCH"], [
        [s.signal_id, s.name, s.correlation_key, s.state, _when(s.accepted_at),
         signal_match(s)] for s in signals
    ], out)


def _waits(waits: Sequence[WaitInfo], out: TextIO) -> None:
    def what(w: WaitInfo) -> str:
        if w.kind == "signal":
            return f"{w.signal_name} key {w.correlation_key}"
        if w.kind == "poll":
            return f"round {w.current_round}/{w.max_rounds}, every {w.interval_seconds} s"
        return f"due {_when(w.due_at)}"

    table(["STEP", "KIND", "STATE", "WAITING FOR", "WINNER", "REASON"], [
        [w.step_id, w.kind, w.state, what(w), w.winner or "-", w.reason or "-"] for w in waits
    ], out)


def _rounds(rounds: Sequence[PollRoundInfo], out: TextIO) -> None:
    table(["ROUND", "TASK", "STATE", "STATUS", "CLASSIFIED", "RESULT"], [
        [str(r.round), r.task_id or "-", r.state, r.status or "-", r.classification or "-",
         _cell(r.result)] for r in rounds
    ], out)


def _late_reports(rounds: Sequence[PollRoundInfo], out: TextIO) -> None:
    table(["ROUND", "ATTEMPT", "REFUSED AS", "OUTCOME", "WHEN", "ANSWER"], [
        [str(r.round), x.attempt_id or "-", x.reason or "-", x.outcome or "-",
         _when(x.reported_at), _cell(x.output if x.error is None else x.error)]
        for r in rounds for x in r.late_reports
    ], out)


def _operations(operations: Sequence[OperationInfo], out: TextIO) -> None:
    table(["OPERATION", "KIND", "ACTOR", "STEP", "WHEN", "REASON"], [
        [o.operation_id, o.kind, o.actor, o.step_id or "-", _when(o.created_at),
         o.reason or "-"] for o in operations
    ], out)


def render_waits(view: WorkflowDescription, out: TextIO) -> None:
    """The sections of ``weave show`` after the tasks; empty sections are left out."""
    def section(title: str, present: bool) -> bool:
        if present:
            print(file=out)
            print(title, file=out)
        return present

    if section("waiting for", bool(view.wait_reasons)):
        for r in view.wait_reasons:
            seen = "never" if r.last_seen_at is None else _when(r.last_seen_at)
            print(f"  {r.reason}: task {r.task_id} of step {r.step_id} waits for "
                  f"{r.handler}@{r.handler_version} on queue {r.queue}; no worker asked for "
                  f"it in the last {r.window_seconds} s (last seen: {seen})", file=out)
    if section("signals", bool(view.signals)):
        render_signals(view.signals, out)
    if section("waits", bool(view.waits)):
        _waits(view.waits, out)
    if section("poll rounds", bool(view.poll_rounds)):
        _rounds(view.poll_rounds, out)
    if section("late poll answers (evidence only)",
               any(r.late_reports for r in view.poll_rounds)):
        _late_reports(view.poll_rounds, out)
    if section("operations", bool(view.operations)):
        _operations(view.operations, out)


def render_task_errors(view: WorkflowDescription, out: TextIO) -> None:
    """Each task's last error in full: type, message and, when the worker sent one, the
    handler's traceback (``error.details.traceback``), indented."""
    failed = [t for t in view.tasks if isinstance(t.error, dict)]
    if not failed:
        return
    print(file=out)
    print("task errors", file=out)
    for t in failed:
        error = t.error
        print(f"  {t.task_id} (step {t.step_id}, {t.handler}@{t.handler_version}, attempts "
              f"{t.attempts_used}/{t.max_attempts}, {t.status}): "
              f"{error.get('type', '-')}: {error.get('message', '')}", file=out)
        details = error.get("details")
        trace = details.get("traceback") if isinstance(details, dict) else None
        if isinstance(trace, str):
            for line in trace.splitlines():
                print(f"    {line}", file=out)


def render_attempts(view: WorkflowDescription, out: TextIO) -> None:
    """``weave show --attempts``: every attempt of every task, in task order."""
    print(file=out)
    print("attempts", file=out)
    table(["TASK", "NO", "WORKER", "STARTED", "LEASE", "HEARTBEAT", "ENDED", "OUTCOME",
           "ERROR"], [
        [t.task_id, str(a.attempt_no), a.worker_id, _when(a.started_at),
         _when(a.lease_expires_at), _when(a.last_heartbeat_at), _when(a.ended_at),
         a.outcome or "running", _cell(a.error)]
        for t in view.tasks for a in t.attempts
    ], out)


def render_task_events(events: Sequence[HistoryTaskEvent], out: TextIO) -> None:
    """After ``weave show --history``: what happened to tasks without a transition."""
    if not events:
        return
    print(file=out)
    print("task events", file=out)
    table(["TIME", "KIND", "STEP", "TASK", "ATTEMPT", "DETAIL"], [
        [_when(e.occurred_at), e.kind, e.step_id, e.task_id, e.attempt_id or "-",
         _cell(e.payload)] for e in events
    ], out)


def render_failure(exc: WorkflowError, out: TextIO) -> None:
    """``step``, ``handler``, ``attempts``, ``error`` and ``review reason`` lines, when known."""
    lines = [("step", exc.step_id),
             ("handler", None if exc.handler is None
              else f"{exc.handler}@{exc.handler_version}"),
             ("attempts", None if exc.attempts_used is None
              else f"{exc.attempts_used}/{exc.max_attempts}"),
             ("error", None if exc.error_type is None and exc.error_message is None
              else f"{exc.error_type or '-'}: {exc.error_message or ''}"),
             ("review reason", exc.review_reason)]
    for name, value in lines:
        if value is not None:
            print(f"  {name}: {value}", file=out)


__all__ = ["render_attempts", "render_failure", "render_signals", "render_task_errors",
           "render_task_events", "render_waits", "signal_match"]
