"""A database of the live-server tests alone: the server's tick must not run under the
controls tests that hold results back on purpose."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import create_mysql_database, drop_mysql_database
from weave_core.storage.migrate import upgrade


@pytest.fixture(scope="session")
def mysql_url() -> Iterator[str]:
    url = create_mysql_database("weave_ctl_live")
    upgrade(url)
    yield url
    drop_mysql_database(url)
