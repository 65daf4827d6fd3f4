"""Fixtures of the dispatch tests: an engine on the session MariaDB, helpers, clock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from weave_core.dispatch import HandlerRef, TaskSpec, claim, create_task
from weave_core.dispatch.model import ClaimedTask, TaskView
from weave_core.engine import Engine
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database, set_clock_offset

ACTOR = "token:test"
HANDLERS = [HandlerRef("echo", "1")]


@pytest.fixture(scope="session")
def _plugins() -> PluginHost:
    return PluginHost.from_plugins([])


@pytest.fixture
def engine(mysql_db: Database, _plugins: PluginHost) -> Engine:
    return Engine(db=mysql_db, plugins=_plugins, limits=Limits(), node_id="dispatch-test")


@pytest.fixture
def clock(mysql_db: Database) -> Iterator[Any]:
    """``clock(seconds)`` moves database time; reset to 0 after the test."""

    def move(seconds: float) -> None:
        set_clock_offset(mysql_db, seconds)

    yield move
    set_clock_offset(mysql_db, 0)


def spec(queue: str = "q", **kw: Any) -> TaskSpec:
    values: dict[str, Any] = {"handler": "echo", "handler_version": "1", "input": {"n": 1}}
    values.update(kw)
    return TaskSpec(queue=queue, **values)


def new_task(engine: Engine, ns: str, queue: str = "q", **kw: Any) -> TaskView:
    return create_task(engine.db, namespace=ns, spec=spec(queue, **kw), actor=ACTOR)


def claim_one(engine: Engine, ns: str, queue: str = "q", worker: str = "w1",
              handlers: list[HandlerRef] | None = None) -> ClaimedTask | None:
    got = claim(engine.db, namespace=ns, queue=queue, worker_id=worker,
                handlers=handlers or HANDLERS, max_tasks=1, actor=engine.actor)
    return got[0] if got else None


def rows(db: Database, sql: str, **params: Any) -> list[Any]:
    return db.read(lambda c: list(c.execute(sa.text(sql), params).mappings().all()))


def audit_actions(db: Database, ns: str, task_id: str) -> list[str]:
    return [r["action"] for r in rows(
        db, "SELECT action FROM weave_audit WHERE namespace=:ns AND object_id=:t ORDER BY id",
        ns=ns, t=task_id)]


def event_types(db: Database, task_id: str) -> list[str]:
    return [r["event_type"] for r in rows(
        db, "SELECT event_type FROM weave_task_events WHERE task_id=:t ORDER BY id", t=task_id)]


@pytest.fixture(autouse=True)
def _ends_with_weave_check(invariants_hold: None) -> None:
    """Every test of this family ends with ``weave check`` clean (tests/invariants.py)."""
