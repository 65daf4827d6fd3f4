"""Controls fixtures: engines on a MariaDB database of the controls tests alone (the tick
of other packages' live servers must not consume the rows these tests hold back)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import create_mysql_database, drop_mysql_database
from tests.runtime.conftest import make_engine
from weave_core.db import Database
from weave_core.engine import Engine
from weave_core.migrate import upgrade
from weave_core.plugins import PluginHost


@pytest.fixture(scope="session")
def mysql_url() -> Iterator[str]:
    url = create_mysql_database("weave_ctl")
    upgrade(url)
    yield url
    drop_mysql_database(url)


@pytest.fixture(scope="session")
def mysql_db(mysql_url: str) -> Iterator[Database]:
    db = Database.from_url(mysql_url)
    yield db
    db.dispose()


@pytest.fixture(scope="session")
def plugin_host() -> PluginHost:
    return PluginHost.from_entry_points()


@pytest.fixture
def engine(mysql_db: Database, plugin_host: PluginHost) -> Engine:
    return make_engine(mysql_db, plugin_host)
