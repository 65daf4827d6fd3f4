"""Acting on an instance from the console: pause, resume, cancel, signal, conclude, recover,
resolve. Each is two posts: the first shows what will happen, the second (``confirm``)
does it, through the same runtime functions as the API, carrying the versions the page was
rendered with, so a stale page gets the API's 409, shown as a sentence.

The operation id is chosen when the instance page is rendered: a double click, or a
confirmation posted twice, replays the first outcome instead of acting twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from weave_core.access.identity import Permission, authorize
from weave_core.engine import Engine
from weave_core.foundation import exactjson
from weave_core.foundation.errors import InvalidJsonError, Problem, ValidationError
from weave_core.foundation.exactjson import JSON
from weave_core.runtime.checkpoints import run_pending
from weave_core.runtime.controls import (
    ConcludeRequest,
    ControlRequest,
    RecoverRequest,
    ResolveRequest,
    cancel,
    conclude,
    pause,
    recover,
    resolve,
    resume,
)
from weave_core.runtime.waits.signals import SignalRequest, accept_signal
from weave_http.ui.forms import Form, read_form
from weave_http.ui.guard import redirect
from weave_http.ui.render import page
from weave_http.ui.session import Session, check_csrf

logger = logging.getLogger(__name__)

PERMISSION: Final = {
    "pause": Permission.CONTROL, "resume": Permission.CONTROL, "cancel": Permission.CONTROL,
    "signal": Permission.SIGNAL, "conclude": Permission.REVIEW,
    "recover": Permission.REVIEW, "resolve": Permission.REVIEW,
}

EFFECT: Final = {
    "pause": "Pause closes the instance's execution gate: no new task is claimed, started "
             "or retried. Attempts already running keep running and their results are saved. "
             "Deadlines keep running.",
    "resume": "Resume lifts only the pause: a review or a cancel stays; the backlog continues "
              "within queue capacity. Deadlines never moved.",
    "cancel": "Cancel stops new steps, cancels tasks not yet started, asks running ones to "
              "cancel and ends open waits. It cannot be undone, and it never undoes a "
              "business effect that already happened.",
    "signal": "The signal is saved durably; if a matching wait is open it is consumed now and "
              "the step completes with the payload as its output.",
    "conclude": "The conclusion and its evidence are recorded on the step's current "
                "activation. Nothing runs yet.",
    "recover": "A new activation of the step runs with the same frozen input, handler and "
               "business idempotency identity; old activations stay as history.",
    "resolve": "The review ends with the chosen outcome: continue (the instance runs on), "
               "failed or cancelled (terminal).",
}

_KEEP: Final = ("action", "operation_id", "reason", "expected_control_version",
                "expected_state_version", "step_id", "conclusion", "evidence", "outcome",
                "signal_id", "name", "correlation_key", "param_version", "payload")


def _json_field(form: Form, name: str, *, default: JSON = None) -> JSON:
    raw = form.text(name, required=False)
    if raw is None:
        return default
    try:
        return exactjson.loads(raw.encode("utf-8"))
    except InvalidJsonError as exc:
        raise ValidationError(f"{name} is not valid JSON", [
            Problem(f"$.{name}", "invalid_json", f"{name}: {exc.message}")]) from None


def _runner(engine: Engine, session: Session, wid: str, form: Form, action: str
            ) -> Callable[[], Any]:
    """What ``action`` does, validated before the confirmation page is shown."""
    ns, actor = session.namespace, session.principal.actor
    operation_id = form.text("operation_id") or ""
    if action in ("pause", "resume", "cancel"):
        request = ControlRequest(form.integer("expected_control_version"), operation_id,
                                 form.text("reason") or "")
        fn = {"pause": pause, "resume": resume, "cancel": cancel}[action]
        return lambda: fn(engine, ns, wid, request, actor=actor)
    if action == "conclude":
        expected = form.get("expected_state_version")
        concluded = ConcludeRequest(
            operation_id, form.text("reason") or "", form.text("step_id") or "",
            form.text("conclusion") or "", _json_field(form, "evidence"),
            None if not expected else form.integer("expected_state_version"))
        return lambda: conclude(engine, ns, wid, concluded, actor=actor)
    if action == "recover":
        recovered = RecoverRequest(
            operation_id, form.text("reason") or "", form.text("step_id") or "",
            form.integer("expected_state_version"),
            form.text("conclusion", required=False), _json_field(form, "evidence"))
        return lambda: recover(engine, ns, wid, recovered, actor=actor)
    if action == "resolve":
        resolved = ResolveRequest(operation_id, form.text("reason") or "",
                                  form.text("outcome") or "continue")
        return lambda: resolve(engine, ns, wid, resolved, actor=actor)
    signal = SignalRequest(
        signal_id=form.text("signal_id") or "", name=form.text("name") or "",
        correlation_key=form.text("correlation_key") or "",
        payload=_json_field(form, "payload"),
        param_version=form.text("param_version", required=False) or "1")

    def _send() -> Any:
        acceptance = accept_signal(engine, ns, wid, signal, actor=actor)
        if acceptance.created and acceptance.pending_id is not None:
            try:  # the fast path, as the API's route does; the tick is the safety net
                run_pending(engine, acceptance.pending_id)
            except Exception:
                logger.exception("console signal %s: fast delivery failed; the tick retries",
                                 signal.signal_id)
        return acceptance

    return _send


async def act(request: Request, engine: Engine, session: Session) -> Response:
    ns = session.namespace
    wid = str(request.path_params["workflow_id"])
    form = await read_form(request, engine.limits)
    check_csrf(request, form.get("csrf"))
    action = form.get("action") or ""
    if action not in PERMISSION:
        raise ValidationError("unknown action", [Problem(
            "$.action", "invalid_field", "one of " + ", ".join(PERMISSION))])
    authorize(session.principal, ns, PERMISSION[action])
    run = _runner(engine, session, wid, form, action)
    base = f"/ui/n/{ns}/instances/{wid}"
    if form.get("confirm") != "yes":
        fields = [(k, v) for k, v in form.items() if k in _KEEP]
        return page("confirm.html", session=session, nav="instances", action=action,
                    effect=EFFECT[action], fields=fields, wid=wid, base=base)
    await run_in_threadpool(run)
    done: dict[str, str] = {"done": action}
    step_id = form.get("step_id")
    if step_id:
        done["step"] = step_id
    return redirect(base + "?" + urlencode(done) + ("#step-detail" if step_id else ""))


__all__ = ["act"]
