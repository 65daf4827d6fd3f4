"""A spy on PyMySQL's command sends: how many round trips a piece of work costs (the
commands are still sent; nothing is stood in for)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pymysql.connections
import pytest


class RoundTrips:
    """Commands PyMySQL sent since the fixture started (``count``)."""

    def __init__(self) -> None:
        self.count = 0


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[RoundTrips]:
    seen = RoundTrips()
    send = pymysql.connections.Connection._execute_command

    def _counted(self: Any, command: int, sql: Any) -> Any:
        seen.count += 1
        return send(self, command, sql)

    monkeypatch.setattr(pymysql.connections.Connection, "_execute_command", _counted)
    yield seen
