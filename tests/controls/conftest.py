"""Controls fixtures: engines on a MariaDB database of the controls tests alone (the tick
of other packages' live servers must not consume the rows these tests hold back)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import migrated_database, opened_database
from tests.runtime.conftest import make_engine
from weave_core.engine import Engine
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database


@pytest.fixture(scope="session")
def mysql_url() -> Iterator[str]:
    yield from migrated_database("weave_ctl")


@pytest.fixture(scope="session")
def mysql_db(mysql_url: str) -> Iterator[Database]:
    yield from opened_database(mysql_url)


@pytest.fixture
def engine(mysql_db: Database, plugin_host: PluginHost) -> Engine:
    return make_engine(mysql_db, plugin_host)


@pytest.fixture(autouse=True)
def _ends_with_weave_check(invariants_hold: None) -> None:
    """Every test of this family ends with ``weave check`` clean (tests/invariants.py)."""
