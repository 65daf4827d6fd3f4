"""Every console page runs through one guard: sign-in, the API's permission rules, and a
readable answer for every refusal (an HTML page with the API's status, never a 500 for a
bad input, never a JSON problem in a browser).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from weave_core.access.identity import Permission
from weave_core.engine import Engine
from weave_core.foundation.errors import AuthenticationError, WeaveError
from weave_http.ui.messages import refusal
from weave_http.ui.render import SECURITY_HEADERS, page
from weave_http.ui.session import Session, clear_session_cookie, current_session

logger = logging.getLogger(__name__)

Handler = Callable[[Request, Engine, Session], Awaitable[Response]]


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303, headers=dict(SECURITY_HEADERS))


def error_page(exc: WeaveError, session: Session | None, back: str | None = None) -> Response:
    found = refusal(exc)
    if found.status >= 500:
        logger.error("console: %s: %s", exc.code, exc.message)
    return page("error.html", found.status, refusal=found, session=session, back=back)


def guarded(engine: Engine, handler: Handler,
            permission: Permission = Permission.READ) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette endpoint of ``handler``: a session of the path's namespace first."""

    async def endpoint(request: Request) -> Response:
        namespace = request.path_params.get("ns")
        try:
            session = await current_session(
                request, engine, None if namespace is None else str(namespace), permission)
        except AuthenticationError as exc:
            if request.method in ("GET", "HEAD"):
                response: Response = redirect("/ui/login")
            else:
                response = error_page(exc, None, "/ui/login")
            clear_session_cookie(response)
            return response
        except WeaveError as exc:
            return error_page(exc, None)
        try:
            return await handler(request, engine, session)
        except WeaveError as exc:
            path = request.url.path
            return error_page(exc, session, path.removesuffix("/act")
                              if path.endswith("/act") else None)

    return endpoint


__all__ = ["Handler", "error_page", "guarded", "redirect"]
