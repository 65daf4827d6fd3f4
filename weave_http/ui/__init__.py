"""The web console at ``/ui`` (docs/console.md): server-rendered pages over the engine's
own reads and controls, signed in with an API token, same permission rules as the API.

Modules: ``session`` (cookie, CSRF), ``guard`` (sign-in and refusals on every page),
``forms`` (bounded urlencoded posts), ``render`` (Jinja2, headers), ``graph`` (SVG),
``queries`` (the console's few own reads), ``messages`` (refusals as sentences),
``pages_*`` (one module per page group).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from weave_core.engine import Engine
from weave_core.foundation.errors import NotFoundError
from weave_http.ui import pages_actions, pages_auth, pages_catalog, pages_instances
from weave_http.ui.guard import error_page, guarded
from weave_http.ui.render import STATIC_DIR

NS = "/n/{ns}"


def _plain(engine: Engine, fn: Callable[[Request, Engine], Awaitable[Response]]
           ) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return await fn(request, engine)

    return endpoint


async def _not_found(request: Request) -> Response:
    return error_page(NotFoundError(f"no console page {request.url.path!r}"), None, "/ui")


def ui_routes(engine: Engine) -> list[BaseRoute]:
    """The console's routes, to be mounted at ``/ui``."""
    g = engine
    return [
        Route("/", _plain(g, pages_auth.home), methods=["GET"]),
        Route("/login", _plain(g, pages_auth.login_form), methods=["GET"]),
        Route("/login", _plain(g, pages_auth.login), methods=["POST"]),
        Route("/logout", _plain(g, pages_auth.logout), methods=["POST"]),
        Route(NS + "/instances", guarded(g, pages_instances.instance_list), methods=["GET"]),
        Route(NS + "/instances/{workflow_id}", guarded(g, pages_instances.instance_page),
              methods=["GET"]),
        Route(NS + "/instances/{workflow_id}/act", guarded(g, pages_actions.act),
              methods=["POST"]),
        Route(NS + "/definitions", guarded(g, pages_catalog.definitions), methods=["GET"]),
        Route(NS + "/definitions/{definition_id}", guarded(g, pages_catalog.definition),
              methods=["GET"]),
        Route(NS + "/definitions/{definition_id}/versions/{version}",
              guarded(g, pages_catalog.version), methods=["GET"]),
        Route(NS + "/definitions/{definition_id}/diff", guarded(g, pages_catalog.diff),
              methods=["GET"]),
        Route(NS + "/queues", guarded(g, pages_catalog.queues), methods=["GET"]),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="ui-static"),
        Route("/{rest:path}", _not_found, methods=["GET", "POST"]),
    ]


def ui_mount(engine: Engine) -> Mount:
    return Mount("/ui", routes=ui_routes(engine))


__all__ = ["ui_mount", "ui_routes"]
