"""A spy on PyMySQL's command sends: how many round trips a piece of work costs (the
commands are still sent; nothing is stood in for)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pymysql.connections
import pytest


class RoundTrips:
    """Commands PyMySQL sent since the fixture started (``count``), and apart from them the
    ``PREPARE`` round trips (``prepares``): a connection prepares a statement shape once,
    the first time it meets it (``weave_core.storage.prepared``), so a count of the work
    itself leaves them out."""

    def __init__(self) -> None:
        self.count = 0
        self.prepares = 0


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[RoundTrips]:
    seen = RoundTrips()
    send = pymysql.connections.Connection._execute_command

    def _counted(self: Any, command: int, sql: Any) -> Any:
        text = sql.decode(errors="replace") if isinstance(sql, bytes) else str(sql)
        if text.startswith("PREPARE weave_ps_"):
            seen.prepares += 1
        else:
            seen.count += 1
        return send(self, command, sql)

    monkeypatch.setattr(pymysql.connections.Connection, "_execute_command", _counted)
    yield seen
