"""Which handlers workers serve: ``GET /v1/namespaces/{ns}/handlers`` (permission ``read``).

``weave publish`` warns about a definition naming a handler no worker has been seen for (a
misspelt handler would otherwise wait PENDING in silence). What was seen is kept in memory
by each engine process — a dict entry written per claim request, no database work on the
claim path — so the answer covers the workers that claimed from this process since it
started (with several processes, from the one answering). It informs; it never refuses.

The same claims feed the process's ``Sightings`` (``weave_core.dispatch.sightings``): at
most every few seconds a thread of the pool writes them to the database, off the request
path, for ``GET …/queues/{queue}`` and the ``handler_unavailable`` wait reason.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable

from starlette.requests import Request
from starlette.responses import Response

from weave_core.access.identity import Permission
from weave_core.dispatch.sightings import Sightings
from weave_http.models import SeenHandler, SeenHandlerList, json_response
from weave_http.routes import ApiRoute, Context

HANDLERS = "/v1/namespaces/{ns}/handlers"

_Key = tuple[str, str, str, str]  # namespace, queue, handler, version
_lock = threading.Lock()


def _seen(request: Request) -> dict[_Key, str]:
    """The application's registry (on ``app.state``: one per app, no globals)."""
    state = request.app.state
    seen: dict[_Key, str] | None = getattr(state, "seen_handlers", None)
    if seen is None:
        with _lock:
            seen = getattr(state, "seen_handlers", None)
            if seen is None:
                seen = state.seen_handlers = {}
    return seen


def sightings(request: Request) -> Sightings:
    """The application's buffer of worker sightings (on ``app.state``, one per app)."""
    state = request.app.state
    found: Sightings | None = getattr(state, "sightings", None)
    if found is None:
        with _lock:
            found = getattr(state, "sightings", None)
            if found is None:
                found = state.sightings = Sightings()
    return found


def note_claim(request: Request, namespace: str, queue: str, worker_id: str,
               handlers: Iterable[tuple[str, str]]) -> None:
    """Record that ``worker_id`` claims ``handlers`` on ``queue`` (a dict write per pair);
    when the sightings are due, write them from a pool thread without waiting for it."""
    pairs = list(handlers)
    seen = _seen(request)
    for name, version in pairs:
        seen[(namespace, queue, name, version)] = worker_id
    buffer = sightings(request)
    if buffer.note(namespace, queue, worker_id, pairs):
        asyncio.get_running_loop().run_in_executor(None, buffer.flush,
                                                   request.app.state.engine.db)


async def list_seen(request: Request, ctx: Context) -> Response:
    _, namespace = ctx.require_principal()
    seen = sorted((k, w) for k, w in list(_seen(request).items()) if k[0] == namespace)
    return json_response(SeenHandlerList(items=[
        SeenHandler(queue=q, handler=h, handler_version=v, worker_id=w)
        for (_, q, h, v), w in seen]))


API_ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        method="GET", path=HANDLERS, endpoint=list_seen, operation_id="listSeenHandlers",
        summary="Handlers workers have claimed with on this engine process since it started "
        "(queue, handler, version, last worker)",
        permission=Permission.READ,
        responses={200: (SeenHandlerList, "handlers seen, by queue, name and version")},
        tags=("tasks",),
    ),
)

__all__ = ["API_ROUTES", "note_claim", "sightings"]
