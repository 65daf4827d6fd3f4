"""Signal routes (DESIGN.md §10, R-7.1): deliver a signal to an instance, list its signals.

``POST`` answers 202 for a newly accepted signal (durably saved; consumption is reported
separately in the instance view and the list), 200 with the original acceptance for the
same id and content, 409 ``signal_conflict`` for the same id with other content, 404 for an
unknown instance (nothing stored). After the commit the accepting process delivers the
signal to its open wait at once (the fast path; the tick is the safety net).
"""

from __future__ import annotations

import logging

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from weave_core.access.identity import Permission
from weave_core.runtime.admission import read_instance
from weave_core.runtime.waits.signals import (
    Acceptance,
    SignalRequest,
    accept_signal,
    list_signals,
)
from weave_http.body import read_json, validate_model
from weave_http.models import SignalList, SignalModel, json_response
from weave_http.models import SignalRequest as SignalRequestModel
from weave_http.routes import ApiRoute, Context

logger = logging.getLogger(__name__)

SIGNALS = "/v1/namespaces/{ns}/workflows/{workflow_id}/signals"


def _deliver(ctx: Context, acceptance: Acceptance) -> None:
    """The fast path: run the SIGNAL pending row now; any failure is left to the tick."""
    if acceptance.pending_id is None:
        return
    from weave_core.runtime.checkpoints import run_pending

    try:
        run_pending(ctx.engine, acceptance.pending_id)
    except Exception:  # the signal is saved; the tick delivers it
        logger.exception("signal %s: fast delivery failed; the tick retries",
                         acceptance.signal.signal_id)


async def send(request: Request, ctx: Context) -> Response:
    principal, namespace = ctx.require_principal()
    engine = ctx.engine
    body = validate_model(SignalRequestModel, await read_json(request, engine.limits))
    workflow_id = str(request.path_params["workflow_id"])
    signal = SignalRequest(signal_id=body.signal_id, name=body.name,
                           correlation_key=body.correlation_key, payload=body.payload,
                           param_version=body.param_version, evidence=tuple(body.evidence))
    acceptance = await run_in_threadpool(accept_signal, engine, namespace, workflow_id, signal,
                                         actor=principal.actor)
    if acceptance.created:
        await run_in_threadpool(_deliver, ctx, acceptance)
    return json_response(SignalModel(**acceptance.signal.to_json()),
                         202 if acceptance.created else 200)


async def list_all(request: Request, ctx: Context) -> Response:
    _, namespace = ctx.require_principal()
    workflow_id = str(request.path_params["workflow_id"])

    def _read() -> SignalList:
        def _in(conn: object) -> SignalList:
            from sqlalchemy.engine import Connection

            assert isinstance(conn, Connection)
            read_instance(conn, namespace, workflow_id)  # 404 for another namespace
            return SignalList(items=[SignalModel(**s)
                                     for s in list_signals(conn, namespace, workflow_id)])

        return ctx.engine.db.read(_in, name="list_signals")

    return json_response(await run_in_threadpool(_read))


API_ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        method="POST", path=SIGNALS, endpoint=send, operation_id="signalWorkflow",
        summary="Deliver a signal (idempotent on signal_id): 202 accepted, 200 the original "
        "acceptance",
        permission=Permission.SIGNAL, request_model=SignalRequestModel,
        responses={202: (SignalModel, "accepted: durably saved (consumption is reported "
                                      "separately)"),
                   200: (SignalModel, "the original acceptance of this signal id")},
        errors=(400, 409, 413, 415, 422, 429), tags=("signals",),
    ),
    ApiRoute(
        method="GET", path=SIGNALS, endpoint=list_all, operation_id="listWorkflowSignals",
        summary="The instance's signals: ACCEPTED, CONSUMED (by which activation), LOST, "
        "EXPIRED",
        permission=Permission.READ,
        responses={200: (SignalList, "signals in acceptance order")}, tags=("signals",),
    ),
)

__all__ = ["API_ROUTES"]
