"""Every reliability family ends with ``weave check``: the invariants I1-I7 hold for what
the test did (weave_core.checks on the test's real database).

``assert_invariants(url_or_db, namespaces)`` runs the check and fails with its lines.
``invariants_hold`` is the fixture the family conftests make autouse: it notes the
namespaces of the session MariaDB database before the test, and after it checks the new
ones, the namespace of the live server's database (``weave_server``) if the test used it,
and every namespace of the test's SQLite file if it made one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from weave_core.checks import CheckReport, run_check
from weave_core.storage.db import Database


def assert_invariants(db: Database | str, namespaces: Iterable[str] | None = None, *,
                      skip: Iterable[str] = ()) -> CheckReport:
    """Run the check on ``namespaces`` (default all) and fail listing every violation."""
    opened = Database.from_url(db, pool_size=1) if isinstance(db, str) else db
    try:
        report = run_check(opened, namespaces=None if namespaces is None else
                           sorted(namespaces), skip=skip)
    finally:
        if isinstance(db, str):
            opened.dispose()
    assert report.ok, "weave check found violations:\n" + "\n".join(
        v.line() for v in report.violations)
    return report


def _names(db: Database) -> set[str]:
    def _read(conn: sa.Connection) -> set[str]:
        if not sa.inspect(conn).has_table("weave_namespaces"):
            return set()
        return {str(n) for n in conn.execute(sa.text("SELECT name FROM weave_namespaces"))
                .scalars()}
    return db.read(_read, name="test_namespaces")


@pytest.fixture
def invariants_hold(request: pytest.FixtureRequest, mysql_db: Database,
                    tmp_path: Path) -> Iterator[None]:
    """After the test, ``weave check`` is clean for every namespace it created."""
    before = _names(mysql_db)
    # the live server's namespace, taken now so that it is torn down after this check
    live = (request.getfixturevalue("weave_server")
            if "weave_server" in request.fixturenames else None)
    yield
    marker = request.node.get_closest_marker("check_skip")
    skip: tuple[str, ...] = () if marker is None else marker.args
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        return  # the test's own failure is the news; a check would only repeat it
    created = _names(mysql_db) - before
    if created:
        assert_invariants(mysql_db, created, skip=skip)
    if live is not None:  # the live server's database of its own
        assert_invariants(live.db, [live.namespace], skip=skip)
    for path in tmp_path.glob("*.db"):
        url = f"sqlite:///{path}"
        sqlite = Database.from_url(url, pool_size=1)
        try:
            names = _names(sqlite)
            if names:
                assert_invariants(sqlite, names, skip=skip)
        finally:
            sqlite.dispose()


__all__ = ["assert_invariants", "invariants_hold"]
