"""Sign-in and sign-out. The token is posted in a form body (never a URL), checked with
the API's ``authenticate``, then lives only in the HttpOnly cookie."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from weave_core.access.identity import authenticate
from weave_core.engine import Engine
from weave_core.foundation.errors import WeaveError
from weave_http.ui.forms import read_form
from weave_http.ui.guard import redirect
from weave_http.ui.messages import refusal
from weave_http.ui.render import page
from weave_http.ui.session import (
    SESSION_COOKIE,
    check_csrf,
    check_login_nonce,
    clear_session_cookie,
    current_session,
    new_login_nonce,
    set_login_cookie,
    set_session_cookie,
)


def _login_page(request: Request, message: str | None = None, status: int = 200) -> Response:
    nonce = new_login_nonce()
    response = page("login.html", status, nonce=nonce, message=message)
    set_login_cookie(response, request, nonce)
    return response


async def home(request: Request, engine: Engine) -> Response:
    try:
        session = await current_session(request, engine)
    except WeaveError:
        return redirect("/ui/login")
    return redirect(f"/ui/n/{session.namespace}/instances")


async def login_form(request: Request, engine: Engine) -> Response:
    return _login_page(request)


async def login(request: Request, engine: Engine) -> Response:
    try:
        form = await read_form(request, engine.limits)
        check_login_nonce(request, form.get("nonce"))
        token = form.text("token") or ""
        principal = await run_in_threadpool(authenticate, engine.db, token)
    except WeaveError as exc:
        found = refusal(exc)
        message = ("That token was not accepted (unknown, revoked, malformed, or its "
                   "namespace is disabled)." if exc.code == "unauthenticated" else found.message)
        return _login_page(request, message, found.status)
    response = redirect(f"/ui/n/{principal.namespace}/instances")
    set_session_cookie(response, request, token)
    return response


async def logout(request: Request, engine: Engine) -> Response:
    response = redirect("/ui/login")
    if not request.cookies.get(SESSION_COOKIE):
        return response  # not signed in: nothing to clear
    try:
        form = await read_form(request, engine.limits)
        check_csrf(request, form.get("csrf"))
    except WeaveError as exc:
        return page("error.html", 403, refusal=refusal(exc), back="/ui")
    clear_session_cookie(response)
    return response


__all__ = ["home", "login", "login_form", "logout"]
