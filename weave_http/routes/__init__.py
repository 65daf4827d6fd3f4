"""The route table: each route declares method, path, permission and wire models once.

One declaration feeds both the Starlette router (:func:`starlette_routes`, which wraps
each endpoint in authentication and authorisation) and the OpenAPI document
(``weave_http.openapi``), so the two cannot drift apart. One module per route group of
DESIGN.md §10 contributes an ``API_ROUTES`` tuple.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from weave_core.engine import Engine
from weave_core.identity import Permission, Principal
from weave_http.auth import require_permission


@dataclass(frozen=True)
class Context:
    """What an endpoint gets besides the request: the engine, and for a protected route
    the authenticated caller and the (authorised) namespace of the path."""

    engine: Engine
    principal: Principal | None = None
    namespace: str | None = None

    def require_principal(self) -> tuple[Principal, str]:
        assert self.principal is not None and self.namespace is not None, "public route"
        return self.principal, self.namespace


Endpoint = Callable[[Request, Context], Awaitable[Response]]


@dataclass(frozen=True)
class QueryParam:
    """One documented query parameter of an operation (the OpenAPI document shows it)."""

    name: str
    schema: Mapping[str, Any]
    description: str


@dataclass(frozen=True)
class ApiRoute:
    """One operation of the public API."""

    method: str
    path: str
    endpoint: Endpoint
    operation_id: str
    summary: str
    permission: Permission | None
    """``None`` for public routes (health, OpenAPI); otherwise the path has ``{ns}``."""
    responses: Mapping[int, tuple[type[BaseModel] | None, str]]
    """Success statuses: status → (body model or None for a non-model body, description)."""
    errors: tuple[int, ...] = ()
    """Problem statuses this operation documents (401/403/404 are added for protected ones)."""
    request_model: type[BaseModel] | None = None
    tags: tuple[str, ...] = field(default=())
    query: tuple[QueryParam, ...] = ()
    """Query parameters the operation reads (documented, all optional)."""


def _wrap(route: ApiRoute, engine: Engine) -> Callable[[Request], Awaitable[Response]]:
    permission = route.permission

    if permission is None:

        async def public(request: Request) -> Response:
            return await route.endpoint(request, Context(engine))

        return public

    async def protected(request: Request) -> Response:
        namespace = str(request.path_params["ns"])
        principal = await require_permission(request, engine, namespace, permission)
        return await route.endpoint(request, Context(engine, principal, namespace))

    return protected


def starlette_routes(api_routes: tuple[ApiRoute, ...], engine: Engine) -> list[Route]:
    """Starlette routes for ``api_routes``, one ``Route`` per path with all its methods."""
    by_path: dict[str, dict[str, ApiRoute]] = {}
    for api_route in api_routes:
        methods = by_path.setdefault(api_route.path, {})
        if api_route.method in methods:
            raise ValueError(f"duplicate route {api_route.method} {api_route.path}")
        if api_route.permission is not None and "{ns}" not in api_route.path:
            raise ValueError(f"protected route {api_route.path} has no {{ns}} parameter")
        methods[api_route.method] = api_route
    routes: list[Route] = []
    for path, methods in by_path.items():
        handlers = {method: _wrap(r, engine) for method, r in methods.items()}

        async def dispatch(
            request: Request,
            handlers: Mapping[str, Callable[[Request], Awaitable[Response]]] = handlers,
        ) -> Response:
            method = "GET" if request.method == "HEAD" else request.method
            return await handlers[method](request)

        routes.append(Route(path, dispatch, methods=sorted(methods), name=path))
    return routes


def all_api_routes() -> tuple[ApiRoute, ...]:
    """Every route of the API, in documentation order."""
    # Imported here: these modules import this one for ApiRoute and Context.
    from weave_http import openapi
    from weave_http.routes import (
        controls,
        definitions,
        handlers,
        health,
        signals,
        tasks,
        workflows,
    )

    return (
        health.API_ROUTES + openapi.API_ROUTES + definitions.API_ROUTES + tasks.API_ROUTES
        + handlers.API_ROUTES + workflows.API_ROUTES + signals.API_ROUTES
        + controls.API_ROUTES
    )


__all__ = ["ApiRoute", "Context", "Endpoint", "QueryParam", "all_api_routes", "starlette_routes"]
