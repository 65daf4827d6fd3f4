"""Signing in to the console: the token in an HttpOnly cookie, CSRF tokens, who is asking.

The cookie holds the API token itself (HttpOnly, SameSite=Strict, Path=/ui), so the
server checks it on every page with the API's own ``authenticate`` and ``authorize``: a
revoked token or a disabled namespace is signed out at once, and the permission rules are
exactly the API's. The CSRF token of a signed-in page is an HMAC of a fixed label keyed by
the session's token: it needs no server state, changes with the token, and a page that
shows it reveals nothing usable (the token cannot be recovered from it). The sign-in form,
before any session exists, uses a double-submit cookie instead.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from weave_core.access.identity import Permission, Principal, authenticate, authorize
from weave_core.engine import Engine
from weave_core.foundation.errors import AuthenticationError, WeaveError

SESSION_COOKIE: Final = "weave_ui_session"
LOGIN_COOKIE: Final = "weave_ui_login"
COOKIE_PATH: Final = "/ui"
MAX_TOKEN_LENGTH: Final = 512
_CSRF_LABEL: Final = b"weave-ui-csrf-v1"


class CsrfError(WeaveError):
    """A form arrived without the CSRF token of this session (another site's form)."""

    code = "csrf_failed"


@dataclass(frozen=True)
class Session:
    """A signed-in page request: the principal and the form token of its pages."""

    principal: Principal
    csrf: str

    @property
    def namespace(self) -> str:
        return self.principal.namespace

    def can(self, permission: Permission) -> bool:
        return self.principal.has(permission)


def csrf_for(token: str) -> str:
    return hmac.new(token.encode("utf-8"), _CSRF_LABEL, hashlib.sha256).hexdigest()


def session_token(request: Request) -> str:
    """The token of the session cookie, or ``AuthenticationError`` (not signed in)."""
    token = request.cookies.get(SESSION_COOKIE)
    if not token or len(token) > MAX_TOKEN_LENGTH:
        raise AuthenticationError("not signed in")
    return token


async def current_session(request: Request, engine: Engine, namespace: str | None = None,
                          permission: Permission = Permission.READ) -> Session:
    """Authenticate the cookie (401) and authorise ``permission`` in ``namespace`` (404/403)."""
    token = session_token(request)
    principal = await run_in_threadpool(authenticate, engine.db, token)
    authorize(principal, principal.namespace if namespace is None else namespace, permission)
    return Session(principal, csrf_for(token))


def check_csrf(request: Request, sent: str | None) -> None:
    """The form's CSRF field must be this session's (constant-time comparison)."""
    expected = csrf_for(session_token(request))
    if not sent or not hmac.compare_digest(sent, expected):
        raise CsrfError("this form is not from this console session; reload the page")


def new_login_nonce() -> str:
    return secrets.token_urlsafe(24)


def check_login_nonce(request: Request, sent: str | None) -> None:
    cookie = request.cookies.get(LOGIN_COOKIE)
    if not cookie or not sent or not hmac.compare_digest(cookie, sent):
        raise CsrfError("the sign-in form expired or is not from this console; try again")


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


def set_session_cookie(response: Response, request: Request, token: str) -> None:
    response.set_cookie(SESSION_COOKIE, token, path=COOKIE_PATH, httponly=True,
                        samesite="strict", secure=_secure(request))
    response.delete_cookie(LOGIN_COOKIE, path=COOKIE_PATH)


def set_login_cookie(response: Response, request: Request, nonce: str) -> None:
    response.set_cookie(LOGIN_COOKIE, nonce, path=COOKIE_PATH, httponly=True,
                        samesite="strict", secure=_secure(request), max_age=3600)


def clear_session_cookie(response: Response) -> None:
    response.delete_cookie(SESSION_COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict")


__all__ = [
    "SESSION_COOKIE",
    "CsrfError",
    "Session",
    "check_csrf",
    "check_login_nonce",
    "clear_session_cookie",
    "csrf_for",
    "current_session",
    "new_login_nonce",
    "set_login_cookie",
    "set_session_cookie",
]
