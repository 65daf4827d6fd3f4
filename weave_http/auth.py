"""Bearer-token authentication and per-route authorisation (deny by default).

Every protected route declares the one permission it needs (``routes.ApiRoute``); before
its endpoint runs:

1. ``Authorization: Bearer <token>`` is required: missing, malformed, unknown or revoked
   → 401 ``unauthenticated`` with ``WWW-Authenticate: Bearer``;
2. the path's ``{ns}`` must be the token's namespace: any other namespace, existing or not,
   → 404 ``not_found`` (objects of another namespace are invisible);
3. the token must hold the permission (``admin`` implies all) → else 403
   ``permission_denied``.

Authentication happens before the body is read, so an anonymous caller cannot make the
server read (or parse) a single byte of a body.
"""

from __future__ import annotations

import re
from typing import Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from weave_core.access.identity import Permission, Principal, authenticate, authorize
from weave_core.engine import Engine
from weave_core.foundation.errors import AuthenticationError

# Real tokens are far shorter; a longer header is refused before it reaches the database.
MAX_TOKEN_LENGTH: Final = 512
_TOKEN68: Final = re.compile(r"[A-Za-z0-9\-._~+/=]+")
"""RFC 6750 token68: ASCII letters, digits and ``-._~+/=`` (one C match, not a Python
loop over the characters: every request checks it)."""


def bearer_token(request: Request) -> str:
    """The token of ``Authorization: Bearer <token>``, or ``AuthenticationError``."""
    header = request.headers.get("authorization")
    if header is None:
        raise AuthenticationError("this route needs 'Authorization: Bearer <token>'")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise AuthenticationError("the Authorization header must be 'Bearer <token>'")
    if len(token) > MAX_TOKEN_LENGTH or _TOKEN68.fullmatch(token) is None:
        raise AuthenticationError("malformed bearer token")
    return token


async def authenticate_request(request: Request, engine: Engine) -> Principal:
    """Who is calling (401 when the token is missing, malformed, unknown or revoked)."""
    token = bearer_token(request)
    principal = engine.tokens.get(token)  # checked in the last second: no round trip
    if principal is None:
        principal = await run_in_threadpool(authenticate, engine.db, token)
        engine.tokens.put(token, principal)
    return principal


async def require_permission(
    request: Request, engine: Engine, namespace: str, permission: Permission
) -> Principal:
    """Authenticate the caller and authorise ``permission`` in ``namespace`` (401/404/403)."""
    principal = await authenticate_request(request, engine)
    authorize(principal, namespace, permission)
    return principal


__all__ = [
    "MAX_TOKEN_LENGTH",
    "authenticate_request",
    "bearer_token",
    "require_permission",
]
