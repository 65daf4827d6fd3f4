"""Audit rows: written in the caller's transaction, read per object with a cursor."""

from __future__ import annotations

import secrets
from decimal import Decimal

import pytest
from sqlalchemy.engine import Connection

from weave_core.access.audit import list_audit, write_audit
from weave_core.foundation.errors import ConflictError
from weave_core.storage.db import Database


def _write(conn: Connection, db: Database, ns: str, object_id: str, **extra: object) -> int:
    return write_audit(
        conn,
        namespace=ns,
        actor="token:abc",
        action="definition.publish",
        object_type="definition",
        object_id=object_id,
        at=db.now(conn),
        **extra,  # type: ignore[arg-type]  # keyword pass-through in a test helper
    )


def test_write_and_list(any_db: Database, ns_name: str) -> None:
    metadata = {"version": "1.0", "size": Decimal("1.10"), "big": 2**64, "nested": [{"a": None}]}

    def _write_two(conn: Connection) -> tuple[int, int]:
        first = _write(conn, any_db, ns_name, "order", operation_id="op-1", metadata=metadata)
        second = _write(conn, any_db, ns_name, "order")
        _write(conn, any_db, ns_name, "other-object")
        _write(conn, any_db, "other-namespace-" + ns_name, "order")
        return first, second

    first, second = any_db.transaction(_write_two, name="t")
    assert first < second

    entries = any_db.read(lambda conn: list_audit(conn, ns_name, "definition", "order"))
    assert [e.id for e in entries] == [first, second]
    one = entries[0]
    assert (one.namespace, one.actor, one.action, one.object_type, one.object_id) == (
        ns_name,
        "token:abc",
        "definition.publish",
        "definition",
        "order",
    )
    assert one.operation_id == "op-1"
    # exact JSON, canonical: 1.10 reads back as 1.1, 2**64 as an exact int
    assert one.metadata == {
        "version": "1.0",
        "size": Decimal("1.1"),
        "big": 2**64,
        "nested": [{"a": None}],
    }
    assert entries[1].metadata is None and entries[1].operation_id is None
    assert one.to_json()["occurred_at"].endswith("Z")


def test_cursor_and_limit(any_db: Database, ns_name: str) -> None:
    ids = any_db.transaction(
        lambda conn: [_write(conn, any_db, ns_name, "obj") for _ in range(5)], name="t"
    )
    page1 = any_db.read(lambda conn: list_audit(conn, ns_name, "definition", "obj", limit=2))
    page2 = any_db.read(
        lambda conn: list_audit(conn, ns_name, "definition", "obj", after_id=page1[-1].id, limit=2)
    )
    rest = any_db.read(
        lambda conn: list_audit(conn, ns_name, "definition", "obj", after_id=page2[-1].id)
    )
    assert [e.id for e in page1 + page2 + rest] == ids
    with pytest.raises(ValueError, match="limit"):
        any_db.read(lambda conn: list_audit(conn, ns_name, "definition", "obj", limit=0))


def test_audit_rolls_back_with_the_change(any_db: Database, ns_name: str) -> None:
    object_id = secrets.token_hex(4)

    def _fail(conn: Connection) -> None:
        _write(conn, any_db, ns_name, object_id)
        raise ConflictError("the change was refused")

    with pytest.raises(ConflictError):
        any_db.transaction(_fail, name="t")
    assert any_db.read(lambda conn: list_audit(conn, ns_name, "definition", object_id)) == []


def test_audit_time_keeps_microseconds_on_mysql(mysql_db: Database, ns_name: str) -> None:
    at = mysql_db.transaction(lambda conn: mysql_db.now(conn), name="t").replace(microsecond=123456)
    mysql_db.transaction(
        lambda conn: write_audit(
            conn,
            namespace=ns_name,
            actor="a",
            action="b",
            object_type="c",
            object_id="d",
            at=at,
        ),
        name="t",
    )
    [entry] = mysql_db.read(lambda conn: list_audit(conn, ns_name, "c", "d"))
    assert entry.occurred_at == at
