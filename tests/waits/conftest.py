"""Waits fixtures: engines on a MariaDB database of the waits tests alone (the test clock
offset is per database, and other packages' live servers run ticks of their own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import migrated_database, opened_database
from tests.runtime.conftest import make_engine
from weave_core.engine import Engine
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database, set_clock_offset


@pytest.fixture(scope="session")
def mysql_url() -> Iterator[str]:
    yield from migrated_database("weave_wt")


@pytest.fixture(scope="session")
def mysql_db(mysql_url: str) -> Iterator[Database]:
    yield from opened_database(mysql_url)


@pytest.fixture
def engine(mysql_db: Database, plugin_host: PluginHost) -> Iterator[Engine]:
    yield make_engine(mysql_db, plugin_host)
    set_clock_offset(mysql_db, 0)


@pytest.fixture
def limited(mysql_db: Database, plugin_host: PluginHost) -> Iterator[Engine]:
    """An engine with small signal limits (backlog 2, retention 60 s)."""
    yield make_engine(mysql_db, plugin_host,
                      limits=Limits(max_unmatched_signals=2, signal_retention_seconds=60))
    set_clock_offset(mysql_db, 0)


@pytest.fixture
def any_engine(any_db: Database, plugin_host: PluginHost) -> Iterator[Engine]:
    """The same test on MariaDB and on the embedded SQLite default."""
    yield make_engine(any_db, plugin_host)
    set_clock_offset(any_db, 0)


@pytest.fixture(autouse=True)
def _ends_with_weave_check(invariants_hold: None) -> None:
    """Every test of this family ends with ``weave check`` clean (tests/invariants.py)."""
