"""Namespaces, tokens, authentication and authorisation, on MariaDB and SQLite."""

from __future__ import annotations

import hashlib

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.access.audit import list_audit
from weave_core.access.identity import (
    Permission,
    Principal,
    authenticate,
    authorize,
    create_namespace,
    create_token,
    revoke_token,
)
from weave_core.foundation.errors import (
    AlreadyExistsError,
    AuthenticationError,
    NotFoundError,
    PermissionDeniedError,
    ValidationError,
)
from weave_core.storage.db import Database
from weave_core.storage.schema import weave_api_tokens, weave_namespaces

# --- namespaces ----------------------------------------------------------------------


def test_create_namespace_writes_row_and_audit(any_db: Database, ns_name: str) -> None:
    create_namespace(any_db, ns_name)

    def _read(conn: Connection) -> tuple[object, ...]:
        row = conn.execute(
            sa.select(weave_namespaces).where(weave_namespaces.c.name == ns_name)
        ).one()
        audit = list_audit(conn, ns_name, "namespace", ns_name)
        return row.disabled, [(a.action, a.actor, a.occurred_at == row.created_at) for a in audit]

    assert any_db.read(_read) == (False, [("namespace.create", "system:cli", True)])


def test_duplicate_namespace_is_refused(any_db: Database, ns_name: str) -> None:
    create_namespace(any_db, ns_name)
    with pytest.raises(AlreadyExistsError) as info:
        create_namespace(any_db, ns_name)
    assert info.value.code == "already_exists"
    assert info.value.details == {"namespace": ns_name}


@pytest.mark.parametrize(
    "name", ["", "Acme", "-acme", ".acme", "_acme", "a b", "acmé", "a/b", "a" * 129, "ns\n"]
)
def test_bad_namespace_names_are_refused(any_db: Database, name: str) -> None:
    with pytest.raises(ValidationError) as info:
        create_namespace(any_db, name)
    assert [p.code for p in info.value.problems] == ["invalid_namespace_name"]


@pytest.mark.parametrize("suffix", ["", ".b_c-1", "9" * 200])
def test_good_namespace_names_are_accepted(any_db: Database, ns_name: str, suffix: str) -> None:
    name = (ns_name + suffix)[:128]
    create_namespace(any_db, name)
    assert (
        any_db.read(
            lambda conn: conn.execute(
                sa.select(weave_namespaces.c.name).where(weave_namespaces.c.name == name)
            ).scalar_one()
        )
        == name
    )


# --- tokens --------------------------------------------------------------------------


def test_token_round_trip(any_db: Database, ns_name: str) -> None:
    create_namespace(any_db, ns_name)
    token = create_token(any_db, ns_name, ["read", Permission.PUBLISH], "ci pipeline")
    prefix, token_id, secret = token.split("_", 2)
    assert prefix == "wv" and len(token_id) == 16 and len(secret) >= 32

    principal = authenticate(any_db, token)
    assert principal == Principal(
        token_id=token_id,
        namespace=ns_name,
        permissions=frozenset({Permission.READ, Permission.PUBLISH}),
    )
    assert principal.actor == f"token:{token_id}"


def test_only_the_hash_is_stored(any_db: Database, ns_name: str) -> None:
    create_namespace(any_db, ns_name)
    token = create_token(any_db, ns_name, ["work", "read"], "worker")
    token_id, secret = token.split("_", 2)[1:]
    row = any_db.read(
        lambda conn: conn.execute(
            sa.select(weave_api_tokens).where(weave_api_tokens.c.token_id == token_id)
        ).one()
    )
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert row.permissions == "read,work"
    assert row.description == "worker"
    assert row.revoked_at is None
    for value in row:
        assert secret not in str(value)


def test_token_for_unknown_namespace_is_not_found(any_db: Database, ns_name: str) -> None:
    with pytest.raises(NotFoundError):
        create_token(any_db, ns_name, ["read"])


def test_unknown_and_missing_permissions_are_refused(any_db: Database, ns_name: str) -> None:
    create_namespace(any_db, ns_name)
    with pytest.raises(ValidationError) as info:
        create_token(any_db, ns_name, ["read", "root", "sudo"])
    assert [(p.path, p.code) for p in info.value.problems] == [
        ("$.permissions[1]", "unknown_permission"),
        ("$.permissions[2]", "unknown_permission"),
    ]
    with pytest.raises(ValidationError) as info:
        create_token(any_db, ns_name, [])
    assert [p.code for p in info.value.problems] == ["no_permissions"]


def test_token_create_and_revoke_are_audited_once(any_db: Database, ns_name: str) -> None:
    create_namespace(any_db, ns_name)
    token = create_token(any_db, ns_name, ["admin"])
    token_id = token.split("_")[1]
    revoke_token(any_db, token_id)
    revoke_token(any_db, token_id)  # already revoked: nothing changes

    entries = any_db.read(lambda conn: list_audit(conn, ns_name, "token", token_id))
    assert [(e.action, e.metadata) for e in entries] == [
        ("token.create", {"permissions": ["admin"]}),
        ("token.revoke", None),
    ]


def test_revoke_unknown_token_is_not_found(any_db: Database) -> None:
    with pytest.raises(NotFoundError):
        revoke_token(any_db, "0000000000000000")


# --- authentication ------------------------------------------------------------------


def test_revoked_token_no_longer_authenticates(any_db: Database, ns_name: str) -> None:
    create_namespace(any_db, ns_name)
    token = create_token(any_db, ns_name, ["read"])
    authenticate(any_db, token)
    revoke_token(any_db, token.split("_")[1])
    with pytest.raises(AuthenticationError, match="revoked"):
        authenticate(any_db, token)


@pytest.mark.parametrize(
    "token",
    [
        "",
        "wv_",
        "Bearer wv_0123456789abcdef_" + "a" * 43,
        "wv_0123456789ABCDEF_" + "a" * 43,
        "wv_0123456789abcdef_short",
        "xx_0123456789abcdef_" + "a" * 43,
        "wv_0123456789abcdef_" + "a" * 500,
        "wv_0123456789abcdef_" + "a" * 42 + "!",
    ],
)
def test_malformed_tokens_are_refused(any_db: Database, token: str) -> None:
    with pytest.raises(AuthenticationError, match="malformed"):
        authenticate(any_db, token)


def test_unknown_id_and_wrong_secret_are_refused(any_db: Database, ns_name: str) -> None:
    create_namespace(any_db, ns_name)
    token = create_token(any_db, ns_name, ["read"])
    token_id = token.split("_")[1]
    with pytest.raises(AuthenticationError, match="invalid token"):
        authenticate(any_db, f"wv_{token_id}_{'A' * 43}")
    with pytest.raises(AuthenticationError, match="invalid token"):
        authenticate(any_db, f"wv_{'f' * 16}_{token.split('_', 2)[2]}")


def test_disabled_namespace_does_not_authenticate(any_db: Database, ns_name: str) -> None:
    create_namespace(any_db, ns_name)
    token = create_token(any_db, ns_name, ["read"])
    any_db.transaction(
        lambda conn: conn.execute(
            sa.update(weave_namespaces)
            .where(weave_namespaces.c.name == ns_name)
            .values(disabled=True)
        ),
        name="disable",
    )
    with pytest.raises(AuthenticationError, match="disabled"):
        authenticate(any_db, token)


def test_authenticate_is_one_query(any_db: Database, ns_name: str) -> None:
    create_namespace(any_db, ns_name)
    token = create_token(any_db, ns_name, ["read"])
    statements: list[str] = []

    def _record(conn: Connection, cursor: object, statement: str, *rest: object) -> None:
        if not statement.startswith("BEGIN"):
            statements.append(statement)

    sa.event.listen(any_db.engine, "before_cursor_execute", _record)
    try:
        authenticate(any_db, token)
    finally:
        sa.event.remove(any_db.engine, "before_cursor_execute", _record)
    assert len(statements) == 1
    assert "weave_api_tokens" in statements[0]


# --- authorisation -------------------------------------------------------------------


def _principal(*permissions: Permission) -> Principal:
    return Principal(token_id="t", namespace="acme", permissions=frozenset(permissions))


@pytest.mark.parametrize("permission", list(Permission))
def test_admin_implies_every_permission(permission: Permission) -> None:
    authorize(_principal(Permission.ADMIN), "acme", permission)


@pytest.mark.parametrize("permission", [p for p in Permission if p is not Permission.READ])
def test_missing_permission_is_denied(permission: Permission) -> None:
    authorize(_principal(Permission.READ), "acme", Permission.READ)
    with pytest.raises(PermissionDeniedError) as info:
        authorize(_principal(Permission.READ), "acme", permission)
    assert info.value.details == {"permission": permission.value}


@pytest.mark.parametrize("permission", list(Permission))
def test_other_namespaces_are_invisible(permission: Permission) -> None:
    with pytest.raises(NotFoundError):
        authorize(_principal(Permission.ADMIN), "other", permission)


def test_permission_names_are_the_public_contract() -> None:
    assert [p.value for p in Permission] == [
        "publish",
        "start",
        "read",
        "signal",
        "control",
        "review",
        "work",
        "admin",
    ]
