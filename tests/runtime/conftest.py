"""Runtime fixtures: engines ("nodes") on a MariaDB database of the runtime tests alone, or
a SQLite file.

The runtime tests get their own session database (overriding ``mysql_url``): other test
packages start live servers whose tick would consume rows these tests hold back on purpose
(and the test clock offset is per database).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import migrated_database, opened_database
from weave_core.engine import Engine
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database


@pytest.fixture(scope="session")
def mysql_url() -> Iterator[str]:
    yield from migrated_database("weave_rt")


@pytest.fixture(scope="session")
def mysql_db(mysql_url: str) -> Iterator[Database]:
    yield from opened_database(mysql_url)


def make_engine(db: Database, plugins: PluginHost, node_id: str = "node-a",
                limits: Limits | None = None) -> Engine:
    return Engine(db=db, plugins=plugins, limits=limits or Limits(), node_id=node_id)


@pytest.fixture
def engine(mysql_db: Database, plugin_host: PluginHost) -> Engine:
    return make_engine(mysql_db, plugin_host)


@pytest.fixture
def any_engine(any_db: Database, plugin_host: PluginHost) -> Engine:
    return make_engine(any_db, plugin_host)


@pytest.fixture(autouse=True)
def _ends_with_weave_check(invariants_hold: None) -> None:
    """Every test of this family ends with ``weave check`` clean (tests/invariants.py)."""
