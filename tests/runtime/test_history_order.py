"""History times follow revision order even when ``now`` was read before a lock wait."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.runtime.history import History
from weave_core.storage.db import Database
from weave_core.storage.schema import weave_transitions


def _history(now: datetime, instance_id: str, revision: int) -> History:
    return History("ns-history", instance_id, revision, f"op-{secrets.token_hex(4)}", now)


def _times(conn: Connection, instance_id: str) -> list[datetime]:
    t = weave_transitions
    rows = conn.execute(
        sa.select(t.c.occurred_at).where(t.c.instance_id == instance_id).order_by(t.c.revision)
    ).scalars()
    return list(rows)


def test_a_later_revision_never_gets_an_earlier_time(mysql_db: Database) -> None:
    instance_id = f"wf_{secrets.token_hex(8)}"
    late = datetime(2026, 1, 1, 12, 0, 5)
    early = late - timedelta(seconds=5)

    def first(conn: Connection) -> None:  # revision 1, committed by a "faster" transaction
        history = _history(late, instance_id, 0)
        history.record("instance.created", to_state="RUNNING")
        history.write(conn, actor="test", action="test", metadata={})

    def second(conn: Connection) -> None:  # read its time before waiting for the lock
        history = _history(early, instance_id, 1)
        history.record("step.phase", step_id="a", to_state="SUCCEEDED")
        history.record("instance.status", to_state="SUCCEEDED")
        history.write(conn, actor="test", action="test", metadata={})
        assert history.now == late

    mysql_db.transaction(first, name="first")
    mysql_db.transaction(second, name="second")
    times = mysql_db.read(lambda conn: _times(conn, instance_id))
    assert times == [late, late, late]


def test_a_time_already_in_order_is_kept(mysql_db: Database) -> None:
    instance_id = f"wf_{secrets.token_hex(8)}"
    t1 = datetime(2026, 1, 1, 12, 0, 0)
    t2 = t1 + timedelta(milliseconds=3)
    for revision, at in ((0, t1), (1, t2)):
        def write(conn: Connection, revision: int = revision, at: datetime = at) -> None:
            history = _history(at, instance_id, revision)
            history.record("step.phase", step_id="a", to_state="ACTIVE")
            history.write(conn, actor="test", action="test", metadata={})

        mysql_db.transaction(write, name="write")
    assert mysql_db.read(lambda conn: _times(conn, instance_id)) == [t1, t2]
