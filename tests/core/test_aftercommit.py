"""In-process wake-ups (``weave_core.foundation.aftercommit``), on a real MariaDB: a waiter
is woken only once the transaction's COMMIT went through, so what it then reads from its
own connection is there; a rolled-back transaction wakes nobody."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.access.identity import create_namespace
from weave_core.foundation.aftercommit import note, subscribe
from weave_core.storage.db import Database
from weave_core.storage.deferred import deferring
from weave_core.storage.schema import weave_queues
from weave_core.storage.statements import insert_rows

AT = datetime(2026, 12, 4, 23, 50)


def _seen_by_another_connection(db: Database, namespace: str) -> list[str]:
    with db.engine.connect() as other:
        rows = other.execute(sa.select(weave_queues.c.name).where(
            weave_queues.c.namespace == namespace))
        names = [str(name) for (name,) in rows]
        other.rollback()
    return names


def test_a_waiter_is_woken_after_the_commit_and_sees_the_row(
    mysql_db: Database, ns_name: str
) -> None:
    create_namespace(mysql_db, ns_name)
    woken: list[tuple[set[Any], list[str]]] = []

    def wake(keys: set[Any]) -> None:  # what a woken claimer does: look for its work
        woken.append((keys, _seen_by_another_connection(mysql_db, ns_name)))

    subscribe(mysql_db.engine, f"test-{ns_name}", wake)

    def run(conn: Connection) -> None:
        with deferring(conn):  # on MariaDB the INSERT travels with the COMMIT
            insert_rows(conn, weave_queues, {"namespace": ns_name, "name": "q1",
                                             "capacity": 1, "outstanding": 0,
                                             "created_at": AT, "updated_at": AT})
            note(conn, f"test-{ns_name}", "q1")

    mysql_db.transaction(run, name="t")
    assert woken == [({"q1"}, ["q1"])]


def test_a_rolled_back_transaction_wakes_nobody(mysql_db: Database, ns_name: str) -> None:
    create_namespace(mysql_db, ns_name)
    woken: list[set[Any]] = []
    subscribe(mysql_db.engine, f"test-{ns_name}", woken.append)

    def run(conn: Connection) -> None:
        note(conn, f"test-{ns_name}", "q1")
        raise RuntimeError("changed its mind")

    with pytest.raises(RuntimeError):
        mysql_db.transaction(run, name="t")
    mysql_db.transaction(lambda conn: None, name="t")  # the next one carries nothing over
    assert woken == []
