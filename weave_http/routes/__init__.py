"""The route table: each route declares method, path, permission and wire models once.

One declaration feeds both the Starlette router (:func:`starlette_routes`, which wraps
each endpoint in authentication and authorisation) and the OpenAPI document
(``weave_http.openapi``), so the two cannot drift apart. One module per route group of
DESIGN.md §10 contributes an ``API_ROUTES`` tuple.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from weave_core.access.identity import Permission, Principal
from weave_core.engine import Engine
from weave_core.observability.observe import REQUEST_IDS
from weave_http.auth import require_permission

QUERY_READ_KEY: Final = "weave.query_read"
"""Where a request's scope records the query parameters its endpoint read (a test compares
them with the OpenAPI document's)."""


class Query:
    """The query parameters of one request, as far as its operation declared them.

    Endpoints read their query only through this: asking for a parameter the route does not
    declare is a bug (``AssertionError``, a 500), so the OpenAPI document, built from the
    same declaration, lists every parameter a route reads.
    """

    def __init__(self, request: Request, declared: frozenset[str]) -> None:
        self._request = request  # the query string is parsed when a parameter is read
        self._declared = declared

    def get(self, name: str) -> str | None:
        if name not in self._declared:
            raise AssertionError(f"query parameter {name!r} is not declared by its route")
        read: set[str] = self._request.scope.setdefault(QUERY_READ_KEY, set())
        read.add(name)
        return self._request.query_params.get(name)


@dataclass(frozen=True)
class Context:
    """What an endpoint gets besides the request: the engine, for a protected route the
    authenticated caller and the (authorised) namespace of the path, and the declared
    query parameters."""

    engine: Engine
    principal: Principal | None = None
    namespace: str | None = None
    query: Query | None = None

    def q(self, name: str) -> str | None:
        """The query parameter ``name`` (it must be declared by the route)."""
        assert self.query is not None, "no request"
        return self.query.get(name)

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


_ID_PARAMS = (("ns", "namespace"), ("workflow_id", "workflow_id"), ("task_id", "task"))


def _request_ids(params: Mapping[str, Any]) -> dict[str, str]:
    return {name: str(params[key]) for key, name in _ID_PARAMS if key in params}


def _wrap(route: ApiRoute, engine: Engine) -> Callable[[Request], Awaitable[Response]]:
    permission = route.permission
    declared = frozenset(q.name for q in route.query)

    if permission is None:

        async def public(request: Request) -> Response:
            return await route.endpoint(request, Context(engine,
                                                         query=Query(request, declared)))

        return public

    async def protected(request: Request) -> Response:
        namespace = str(request.path_params["ns"])
        REQUEST_IDS.set(_request_ids(request.path_params))  # for the log lines it causes
        principal = await require_permission(request, engine, namespace, permission)
        return await route.endpoint(request, Context(engine, principal, namespace,
                                                     Query(request, declared)))

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
    from weave_http import metrics, openapi
    from weave_http.routes import (
        controls,
        definitions,
        handlers,
        health,
        signals,
        task_records,
        tasks,
        workflows,
    )

    return (
        health.API_ROUTES + openapi.API_ROUTES + definitions.API_ROUTES + tasks.API_ROUTES
        + handlers.API_ROUTES + workflows.API_ROUTES + signals.API_ROUTES
        + controls.API_ROUTES + task_records.API_ROUTES + metrics.API_ROUTES
    )


__all__ = [
    "QUERY_READ_KEY", "ApiRoute", "Context", "Endpoint", "Query", "QueryParam", "all_api_routes",
    "starlette_routes",
]
