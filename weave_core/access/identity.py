"""Namespaces, API tokens (stored hashed), permissions, authentication and authorisation.

A token is ``wv_<token_id>_<secret>``: ``token_id`` (16 hex digits) is public and finds the
row; only the SHA-256 of the whole token is stored, so a database leak yields no usable
token. Each token is bound to one namespace and a set of permissions; ``admin`` implies
every other permission. Objects of another namespace are invisible: ``authorize`` answers
``NotFoundError`` for them, never ``PermissionDeniedError``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from weave_core.access.audit import write_audit
from weave_core.foundation.errors import (
    AlreadyExistsError,
    AuthenticationError,
    NotFoundError,
    PermissionDeniedError,
    Problem,
    ValidationError,
)
from weave_core.storage.db import Database
from weave_core.storage.locks import LockLevel, lock_namespace_shared, lock_one
from weave_core.storage.schema import weave_api_tokens, weave_namespaces


class Permission(StrEnum):
    """What a token may do in its namespace."""

    PUBLISH = "publish"
    START = "start"
    READ = "read"
    SIGNAL = "signal"
    CONTROL = "control"
    REVIEW = "review"
    WORK = "work"
    ADMIN = "admin"  # implies every other permission


CLI_ACTOR: Final = "system:cli"
TOKEN_PREFIX: Final = "wv"
MAX_DESCRIPTION_LENGTH: Final = 255
_NAMESPACE_RE: Final = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")
_TOKEN_RE: Final = re.compile(r"wv_([0-9a-f]{16})_([A-Za-z0-9_-]{32,64})")
_MAX_TOKEN_LENGTH: Final = 128
# Compared against when the token id is unknown, so that a miss costs what a hit costs.
_DUMMY_HASH: Final = hashlib.sha256(b"weave:no-such-token").hexdigest()


@dataclass(frozen=True)
class Principal:
    """Who is calling: one token, bound to one namespace."""

    token_id: str
    namespace: str
    permissions: frozenset[Permission]

    @property
    def actor(self) -> str:
        """The actor recorded in audit rows."""
        return f"token:{self.token_id}"

    def has(self, permission: Permission) -> bool:
        return Permission.ADMIN in self.permissions or permission in self.permissions


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def validate_namespace_name(name: str) -> None:
    """1 to 128 characters ``[a-z0-9][a-z0-9._-]*``, or ``ValidationError``."""
    if not isinstance(name, str) or _NAMESPACE_RE.fullmatch(name) is None:
        raise ValidationError(
            f"invalid namespace name {name!r}",
            [
                Problem(
                    "$.namespace",
                    "invalid_namespace_name",
                    "a namespace name is 1-128 characters: lower-case letters, digits, "
                    "'.', '_' or '-', starting with a letter or digit",
                )
            ],
        )


def parse_permissions(values: Iterable[Permission | str]) -> frozenset[Permission]:
    """Permissions from their names; every unknown name is reported at once."""
    found: set[Permission] = set()
    problems: list[Problem] = []
    for index, value in enumerate(values):
        try:
            found.add(Permission(value))
        except ValueError:
            problems.append(
                Problem(
                    f"$.permissions[{index}]",
                    "unknown_permission",
                    f"unknown permission {value!r}; known: "
                    + ", ".join(p.value for p in Permission),
                )
            )
    if not found and not problems:
        problems.append(Problem("$.permissions", "no_permissions", "give at least one"))
    if problems:
        raise ValidationError("invalid permissions", problems)
    return frozenset(found)


# --- namespaces ----------------------------------------------------------------------


def create_namespace(db: Database, name: str, *, actor: str = CLI_ACTOR) -> None:
    """Create a namespace; ``AlreadyExistsError`` if it exists."""
    validate_namespace_name(name)

    def _create(conn: Connection) -> None:
        now = db.now(conn)
        try:
            conn.execute(sa.insert(weave_namespaces), dict(name=name, created_at=now))
        except IntegrityError as exc:
            raise AlreadyExistsError(
                f"namespace {name!r} already exists", details={"namespace": name}
            ) from exc
        write_audit(
            conn,
            namespace=name,
            actor=actor,
            action="namespace.create",
            object_type="namespace",
            object_id=name,
            at=now,
        )

    db.transaction(_create, name="create_namespace")


# --- tokens --------------------------------------------------------------------------


def create_token(
    db: Database,
    namespace: str,
    permissions: Iterable[Permission | str],
    description: str | None = None,
    *,
    actor: str = CLI_ACTOR,
) -> str:
    """Create a token and return it in full (the only time it is ever visible)."""
    granted = parse_permissions(permissions)
    if description is not None and len(description) > MAX_DESCRIPTION_LENGTH:
        raise ValidationError(
            "description too long",
            [
                Problem(
                    "$.description",
                    "too_long",
                    f"at most {MAX_DESCRIPTION_LENGTH} characters",
                )
            ],
        )
    token_id = secrets.token_hex(8)
    token = f"{TOKEN_PREFIX}_{token_id}_{secrets.token_urlsafe(32)}"
    stored_permissions = ",".join(sorted(p.value for p in granted))

    def _create(conn: Connection) -> None:
        if lock_namespace_shared(conn, namespace) is None:
            raise NotFoundError(
                f"namespace {namespace!r} not found", details={"namespace": namespace}
            )
        now = db.now(conn)
        conn.execute(
            sa.insert(weave_api_tokens), dict(
                token_id=token_id,
                namespace=namespace,
                token_hash=_hash(token),
                permissions=stored_permissions,
                description=description,
                created_at=now,
            )
        )
        write_audit(
            conn,
            namespace=namespace,
            actor=actor,
            action="token.create",
            object_type="token",
            object_id=token_id,
            metadata={"permissions": sorted(p.value for p in granted)},
            at=now,
        )

    db.transaction(_create, name="create_token")
    return token


def revoke_token(db: Database, token_id: str, *, actor: str = CLI_ACTOR) -> None:
    """Revoke a token at once; revoking a revoked token changes nothing."""

    def _revoke(conn: Connection) -> None:
        row = lock_one(
            conn,
            LockLevel.IDENTITY,
            weave_api_tokens,
            weave_api_tokens.c.token_id == token_id,
        )
        if row is None:
            raise NotFoundError(f"token {token_id!r} not found", details={"token_id": token_id})
        if row.revoked_at is not None:
            return
        now = db.now(conn)
        conn.execute(
            sa.update(weave_api_tokens)
            .where(weave_api_tokens.c.token_id == token_id)
            .values(revoked_at=now)
        )
        write_audit(
            conn,
            namespace=row.namespace,
            actor=actor,
            action="token.revoke",
            object_type="token",
            object_id=token_id,
            at=now,
        )

    db.transaction(_revoke, name="revoke_token")


# --- authentication and authorisation -------------------------------------------------


def authenticate(db: Database, token: str) -> Principal:
    """The principal a bearer token stands for, or ``AuthenticationError``.

    One primary-key query (token joined to its namespace); the hash is compared in
    constant time, and an unknown token id costs the same comparison.
    """
    match = _TOKEN_RE.fullmatch(token) if len(token) <= _MAX_TOKEN_LENGTH else None
    if match is None:
        raise AuthenticationError("malformed token")
    token_id = match.group(1)
    t, n = weave_api_tokens, weave_namespaces
    stmt = (
        sa.select(t.c.namespace, t.c.token_hash, t.c.permissions, t.c.revoked_at, n.c.disabled)
        .select_from(t.join(n, n.c.name == t.c.namespace))
        .where(t.c.token_id == token_id)
    )
    row = db.read(lambda conn: conn.execute(stmt).one_or_none(), name="authenticate")
    stored = _DUMMY_HASH if row is None else row.token_hash
    matches = hmac.compare_digest(_hash(token), stored)
    if row is None or not matches:
        raise AuthenticationError("invalid token")
    if row.revoked_at is not None:
        raise AuthenticationError("token revoked")
    if row.disabled:
        raise AuthenticationError("namespace disabled")
    return Principal(
        token_id=token_id,
        namespace=row.namespace,
        permissions=frozenset(Permission(p) for p in row.permissions.split(",") if p),
    )


TOKEN_CACHE_SECONDS: Final = 1.0
"""How long an engine process trusts a token it checked: a token revoked (or a namespace
disabled) anywhere stops working in every process within this bound."""
TOKEN_CACHE_SIZE: Final = 10_000


class TokenCache:
    """The principals of tokens this process checked in the last second (thread-safe).

    Authenticating costs a database round trip; a worker sends several requests per
    second with one token. Only successes are kept, keyed by the token's hash (the token
    itself is never stored), each for :data:`TOKEN_CACHE_SECONDS` of monotonic time.
    """

    def __init__(self, seconds: float = TOKEN_CACHE_SECONDS,
                 size: int = TOKEN_CACHE_SIZE) -> None:
        self._seconds = seconds
        self._size = size
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, Principal]] = {}

    def get(self, token: str) -> Principal | None:
        key = _hash(token)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] <= time.monotonic():
                del self._entries[key]
                return None
            return entry[1]

    def put(self, token: str, principal: Principal) -> None:
        with self._lock:
            if len(self._entries) >= self._size:
                self._entries.clear()  # a burst of distinct tokens: start afresh
            self._entries[_hash(token)] = (time.monotonic() + self._seconds, principal)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def authenticate_cached(db: Database, cache: TokenCache, token: str) -> Principal:
    """:func:`authenticate`, trusting a success for at most one second."""
    principal = cache.get(token)
    if principal is None:
        principal = authenticate(db, token)
        cache.put(token, principal)
    return principal


def authorize(principal: Principal, namespace: str, permission: Permission) -> None:
    """Allow the call, or raise: another namespace is ``NotFoundError`` (invisible),
    a missing permission ``PermissionDeniedError``.
    """
    if principal.namespace != namespace:
        raise NotFoundError(f"namespace {namespace!r} not found", details={"namespace": namespace})
    if not principal.has(permission):
        raise PermissionDeniedError(
            f"this token lacks the {permission.value!r} permission",
            details={"permission": permission.value},
        )


__all__ = [
    "CLI_ACTOR",
    "TOKEN_CACHE_SECONDS",
    "Permission",
    "Principal",
    "TokenCache",
    "authenticate",
    "authenticate_cached",
    "authorize",
    "create_namespace",
    "create_token",
    "parse_permissions",
    "revoke_token",
    "validate_namespace_name",
]
