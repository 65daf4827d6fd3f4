"""Shared fixtures: a real MariaDB database per test session, SQLite files per test.

MariaDB is found at ``WEAVE_TEST_MYSQL_URL`` (default ``mysql+pymysql://root@127.0.0.1:3306/``).
Without it, storage tests skip, unless ``WEAVE_REQUIRE_MYSQL=1`` (set by CI), which turns
the skip into a failure: a skipped storage test is not evidence.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pymysql
import pytest

from tests.invariants import invariants_hold  # noqa: F401  shared fixture
from tests.live_server import (  # noqa: F401  shared fixtures
    live_database,
    weave_server,
    weave_server_process,
)
from tests.round_trips import round_trips  # noqa: F401  a shared fixture
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database
from weave_core.storage.migrate import upgrade

MYSQL_SERVER_URL = os.environ.get("WEAVE_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/")
REQUIRE_MYSQL = os.environ.get("WEAVE_REQUIRE_MYSQL") == "1"


def _server_params() -> dict[str, object]:
    parts = urlsplit(MYSQL_SERVER_URL)
    return {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 3306,
        "user": parts.username or "root",
        "password": parts.password or "",
    }


def _database_url(name: str) -> str:
    parts = urlsplit(MYSQL_SERVER_URL)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", "charset=utf8mb4", ""))


def mysql_unavailable(reason: str) -> None:
    """Skip, or fail when CI demands MariaDB (``WEAVE_REQUIRE_MYSQL=1``)."""
    if REQUIRE_MYSQL:
        pytest.fail(f"MariaDB is required (WEAVE_REQUIRE_MYSQL=1) but unavailable: {reason}")
    pytest.skip(f"MariaDB unavailable: {reason}")


def create_mysql_database(prefix: str = "weave_t") -> str:
    """Create an empty throw-away database and return its SQLAlchemy URL."""
    name = f"{prefix}_{os.getpid()}_{secrets.token_hex(4)}"
    try:
        conn = pymysql.connect(**_server_params())  # type: ignore[call-overload]  # a dict of known keyword arguments
    except pymysql.err.OperationalError as exc:
        mysql_unavailable(str(exc))
        raise  # unreachable: mysql_unavailable raises
    try:
        with conn.cursor() as cur:
            cur.execute(
                f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
            )
    finally:
        conn.close()
    return _database_url(name)


def drop_mysql_database(url: str) -> None:
    name = urlsplit(url).path.lstrip("/")
    conn = pymysql.connect(**_server_params())  # type: ignore[call-overload]  # a dict of known keyword arguments
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
    finally:
        conn.close()


def migrated_database(prefix: str = "weave_t") -> Iterator[str]:
    """A migrated throw-away MariaDB database, dropped afterwards: ``yield from`` it in a
    session fixture ``mysql_url`` (a test package that needs a database of its own
    overrides ``mysql_url`` and ``mysql_db`` in its conftest with these two helpers)."""
    url = create_mysql_database(prefix)
    upgrade(url)
    yield url
    drop_mysql_database(url)


def opened_database(url: str) -> Iterator[Database]:
    """``Database.from_url(url)``, disposed afterwards (``yield from`` it in a fixture)."""
    db = Database.from_url(url)
    yield db
    db.dispose()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Keep the call phase's report on the item (``invariants_hold`` skips the check after
    a test that already failed)."""
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report


@pytest.fixture(scope="session")
def mysql_url() -> Iterator[str]:
    """A migrated throw-away MariaDB database shared by the session (isolate by namespace)."""
    yield from migrated_database()


@pytest.fixture(scope="session")
def mysql_db(mysql_url: str) -> Iterator[Database]:
    yield from opened_database(mysql_url)


@pytest.fixture(scope="session")
def plugin_host() -> PluginHost:
    """The node kinds installed here, loaded from their entry points."""
    return PluginHost.from_entry_points()


@pytest.fixture
def empty_mysql_url() -> Iterator[str]:
    """A fresh, unmigrated MariaDB database of this test alone (migration tests)."""
    url = create_mysql_database("weave_m")
    yield url
    drop_mysql_database(url)


@pytest.fixture
def sqlite_url(tmp_path: object) -> str:
    return f"sqlite:///{tmp_path}/weave.db"


@pytest.fixture
def sqlite_db(sqlite_url: str) -> Iterator[Database]:
    upgrade(sqlite_url)
    db = Database.from_url(sqlite_url)
    yield db
    db.dispose()


@pytest.fixture(params=["mysql", "sqlite"])
def any_db(request: pytest.FixtureRequest) -> Database:
    """The same test on MariaDB and on the embedded SQLite default."""
    name = "mysql_db" if request.param == "mysql" else "sqlite_db"
    db = request.getfixturevalue(name)
    assert isinstance(db, Database)
    return db


@pytest.fixture
def ns_name() -> str:
    """A namespace name no other test uses (tests share one database per session)."""
    return f"ns-{secrets.token_hex(6)}"
