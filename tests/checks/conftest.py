"""The check's tests get their own MariaDB database: they corrupt rows on purpose."""

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
    yield from migrated_database("weave_ck")


@pytest.fixture(scope="session")
def mysql_db(mysql_url: str) -> Iterator[Database]:
    yield from opened_database(mysql_url)


@pytest.fixture
def engine(mysql_db: Database, plugin_host: PluginHost) -> Engine:
    return Engine(db=mysql_db, plugins=plugin_host, limits=Limits(), node_id="node-check")


@pytest.fixture
def any_engine(any_db: Database, plugin_host: PluginHost) -> Engine:
    return Engine(db=any_db, plugins=plugin_host, limits=Limits(), node_id="node-check")
