"""The Starlette application factory: ``create_app(engine)``.

The app holds no state of its own besides the engine it is given (no globals): any number
of apps, each on its own engine, can run side by side in one process, and the caller owns
the engine's lifetime (``weave serve`` closes it when the server stops).

Layers, outermost first: ``TelemetryMiddleware`` (metrics, a span and log ids per request,
``weave_http.instrument``) → ``InternalErrorMiddleware`` (an unexpected exception becomes
a logged 500 ``internal_error``) → Starlette's exception middleware with the one error
mapping of ``weave_http.problems`` → the router built from the route table
(``GET /metrics`` among them, ``weave_http.metrics``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from prometheus_client.multiprocess import mark_process_dead
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from weave_core.engine import Engine
from weave_core.runtime.tick import TickLoop
from weave_http.instrument import TelemetryMiddleware
from weave_http.metrics import MetricsSettings
from weave_http.problems import EXCEPTION_HANDLERS, InternalErrorMiddleware
from weave_http.routes import all_api_routes, starlette_routes
from weave_http.shutdown import drain, on_stop_signal
from weave_http.ui import ui_mount


def create_app(engine: Engine, *, tick: bool = False, owns_engine: bool = False,
               metrics: bool = True, metrics_token: str | None = None) -> Starlette:
    """The Weave API application serving ``engine``.

    ``tick=True`` runs the runtime's tick loop (R-6.1) on a background thread for the
    application's lifetime (started and stopped by the ASGI lifespan; ``weave serve``
    turns it on unless ``--no-tick``). ``owns_engine=True`` closes the engine when the
    application stops (a ``weave serve --workers`` process). ``metrics=False`` leaves
    ``GET /metrics`` out (``weave serve --metrics-port`` serves it on its own port);
    ``metrics_token`` makes it ask for that bearer token.
    """

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        restore = on_stop_signal(engine)  # a stop signal ends the long polls at once
        loop = TickLoop(engine) if tick else None
        if loop is not None:
            loop.start()
        try:
            yield
        finally:
            restore()
            drain(engine)
            if loop is not None:
                # Joining waits for the candidate in hand: keep the event loop free meanwhile.
                await run_in_threadpool(loop.stop)
            if owns_engine:
                engine.close()
            if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
                # This process's live gauges (waiters) leave the sum; its counters stay.
                mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]

    routes = starlette_routes(all_api_routes(), engine)
    templates = {r.endpoint: r.path for r in routes}
    app = Starlette(
        # The web console (docs/console.md) is served beside the API by the same process.
        routes=[*routes, ui_mount(engine)],
        middleware=[Middleware(TelemetryMiddleware, templates=templates),
                    Middleware(InternalErrorMiddleware)],
        exception_handlers=dict(EXCEPTION_HANDLERS),
        lifespan=lifespan,
    )
    # A path with one slash more or less is another path: 404 route_not_found, never a
    # redirect whose Location is built from the client's Host header. The console's
    # ``/ui`` alone is sent to ``/ui/`` with a relative Location.
    app.router.redirect_slashes = False
    app.router.routes.insert(0, Route("/ui", _console_root, methods=["GET"]))
    app.state.engine = engine
    if metrics:
        app.state.metrics = MetricsSettings.of(engine, metrics_token)
    return app


async def _console_root(_request: Request) -> Response:
    return RedirectResponse("/ui/", status_code=307)


__all__ = ["create_app"]
