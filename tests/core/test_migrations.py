"""Migrations: one head, frozen scripts, a full down/up cycle with rows, and no drift from
``weave_core.storage.schema`` on MariaDB and SQLite.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from weave_core.foundation.errors import DatabaseNotMigratedError
from weave_core.storage import schema
from weave_core.storage.db import Database
from weave_core.storage.migrate import (
    current_revision,
    downgrade,
    ensure_current,
    head_revision,
    prepare_database,
    script_directory,
    upgrade,
)

FOUNDATION = "0001_foundation"
FOUNDATION_TABLES = {
    "weave_namespaces",
    "weave_api_tokens",
    "weave_definitions",
    "weave_audit",
    "weave_clock",
}


@pytest.fixture(params=["mysql", "sqlite"])
def empty_url(request: pytest.FixtureRequest) -> str:
    """An empty, never migrated database of this test alone."""
    name = "empty_mysql_url" if request.param == "mysql" else "sqlite_url"
    url = request.getfixturevalue(name)
    assert isinstance(url, str)
    return url


@pytest.fixture
def empty_db(empty_url: str) -> Iterator[Database]:
    db = Database.from_url(empty_url, pool_size=2)
    yield db
    db.dispose()


def _tables(db: Database) -> set[str]:
    with db.engine.connect() as conn:
        return set(sa.inspect(conn).get_table_names()) - {"alembic_version"}


def _schema_diffs(db: Database, metadata: sa.MetaData) -> list[Any]:
    with db.engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "compare_server_default": True}
        )
        return list(compare_metadata(context, metadata))


# --- the scripts ---------------------------------------------------------------------


def test_there_is_exactly_one_head() -> None:
    heads = script_directory().get_heads()
    assert heads == [head_revision()]


def test_history_is_one_line_from_the_foundation() -> None:
    revisions = list(script_directory().walk_revisions("base", "heads"))
    assert revisions[-1].revision == FOUNDATION
    assert revisions[-1].down_revision is None
    assert all(r.down_revision is not None for r in revisions[:-1])


def test_every_script_freezes_its_tables_and_is_named_after_its_revision() -> None:
    for revision in script_directory().walk_revisions():
        path = Path(revision.path)
        assert path.stem == revision.revision
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            name
            for node in ast.walk(tree)
            for name in (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
        }
        # never built from the live models: their meaning changes as the code moves on
        assert not {m for m in imported if m.split(".")[0] in ("weave_core", "migrations")}


# --- applying them -------------------------------------------------------------------


def test_empty_database_is_refused_until_migrated(empty_url: str, empty_db: Database) -> None:
    assert current_revision(empty_url) is None
    with pytest.raises(DatabaseNotMigratedError, match="weave migrate") as info:
        ensure_current(empty_db)
    assert info.value.details == {"current": None, "head": head_revision()}
    upgrade(empty_url)
    assert current_revision(empty_url) == head_revision()
    ensure_current(empty_db)  # no error


def test_database_behind_the_code_is_refused(empty_mysql_url: str) -> None:
    """Meaningful once a second revision exists; until then it checks the head itself."""
    upgrade(empty_mysql_url, FOUNDATION)
    db = Database.from_url(empty_mysql_url, pool_size=1)
    try:
        if head_revision() == FOUNDATION:
            ensure_current(db)
        else:
            with pytest.raises(DatabaseNotMigratedError, match="weave migrate"):
                ensure_current(db)
    finally:
        db.dispose()


def test_upgrade_twice_changes_nothing(empty_url: str, empty_db: Database) -> None:
    upgrade(empty_url)
    upgrade(empty_url)
    assert current_revision(empty_url) == head_revision()
    assert empty_db.read(lambda conn: conn.execute(sa.select(schema.weave_clock)).all()) == [(1, 0)]


def test_prepare_database_migrates_sqlite_only(sqlite_url: str, empty_mysql_url: str) -> None:
    lite = Database.from_url(sqlite_url, pool_size=1)
    maria = Database.from_url(empty_mysql_url, pool_size=1)
    try:
        prepare_database(lite)
        assert current_revision(sqlite_url) == head_revision()
        with pytest.raises(DatabaseNotMigratedError):
            prepare_database(maria)
        assert current_revision(empty_mysql_url) is None
    finally:
        lite.dispose()
        maria.dispose()


def _seed_foundation(db: Database) -> None:
    def _seed(conn: sa.Connection) -> None:
        now = db.now(conn)
        conn.execute(sa.insert(schema.weave_namespaces).values(name="keep", created_at=now))
        conn.execute(
            sa.insert(schema.weave_api_tokens).values(
                token_id="0123456789abcdef",
                namespace="keep",
                token_hash="0" * 64,
                permissions="read",
                created_at=now,
            )
        )
        conn.execute(
            sa.insert(schema.weave_definitions).values(
                namespace="keep",
                definition_id="d",
                version="1",
                content_hash="f" * 64,
                document='{"a":1}',
                published_at=now,
                published_by="token:x",
            )
        )
        conn.execute(
            sa.insert(schema.weave_audit).values(
                namespace="keep",
                occurred_at=now,
                actor="a",
                action="b",
                object_type="c",
                object_id="d",
            )
        )

    db.transaction(_seed, name="seed")


def _count(db: Database, table: sa.Table) -> int:
    stmt = sa.select(sa.func.count()).select_from(table)
    return int(db.read(lambda conn: conn.execute(stmt).scalar_one()))


def test_upgrade_downgrade_upgrade_with_rows_present(empty_url: str, empty_db: Database) -> None:
    revisions = [r.revision for r in script_directory().walk_revisions("base", "heads")][::-1]
    upgrade(empty_url, FOUNDATION)
    _seed_foundation(empty_db)

    # Every later revision steps down and up again over the foundation rows, which survive.
    for revision in revisions[1:]:
        upgrade(empty_url, revision)
        downgrade(empty_url, "-1")
        upgrade(empty_url, revision)
        assert _count(empty_db, schema.weave_namespaces) == 1
    assert current_revision(empty_url) == head_revision()
    for table in (
        schema.weave_namespaces,
        schema.weave_api_tokens,
        schema.weave_definitions,
        schema.weave_audit,
    ):
        assert _count(empty_db, table) == 1, table.name

    downgrade(empty_url, "base")
    assert current_revision(empty_url) is None
    assert _tables(empty_db) == set()

    upgrade(empty_url)
    assert current_revision(empty_url) == head_revision()
    assert FOUNDATION_TABLES <= _tables(empty_db)
    _seed_foundation(empty_db)  # the keys are free again: the schema works after the cycle
    assert _count(empty_db, schema.weave_namespaces) == 1


# --- no drift between the frozen scripts and the live models -------------------------


def test_migrated_database_matches_schema_module(empty_url: str, empty_db: Database) -> None:
    upgrade(empty_url)
    assert set(schema.metadata.tables) == _tables(empty_db)
    assert _schema_diffs(empty_db, schema.metadata) == []


def test_drift_check_sees_a_difference(empty_url: str, empty_db: Database) -> None:
    """The comparison above is live: a model the scripts do not produce shows up."""
    upgrade(empty_url)
    changed = sa.MetaData()
    for table in schema.metadata.tables.values():
        table.to_metadata(changed)
    sa.Table(
        "weave_audit",
        changed,
        sa.Column("extra", sa.String(10), nullable=True),
        sa.Index("ix_weave_audit_extra", "extra"),
        extend_existing=True,
    )
    diffs = _schema_diffs(empty_db, changed)
    kinds = {diff[0] for diff in diffs if isinstance(diff, tuple)}
    assert {"add_column", "add_index"} <= kinds


def test_mysql_tables_use_innodb_utf8mb4_bin_and_datetime6(empty_mysql_url: str) -> None:
    upgrade(empty_mysql_url)
    db = Database.from_url(empty_mysql_url, pool_size=1)
    try:

        def _facts(conn: sa.Connection) -> tuple[set[tuple[str, str]], set[str]]:
            tables = conn.execute(
                sa.text(
                    "SELECT engine, table_collation FROM information_schema.tables "
                    "WHERE table_schema = DATABASE() AND table_name LIKE 'weave\\_%'"
                )
            ).all()
            times = (
                conn.execute(
                    sa.text(
                        "SELECT column_type FROM information_schema.columns "
                        "WHERE table_schema = DATABASE() AND data_type = 'datetime'"
                    )
                )
                .scalars()
                .all()
            )
            return {(str(r[0]), str(r[1])) for r in tables}, set(times)

        tables, times = db.read(_facts)
    finally:
        db.dispose()
    assert tables == {("InnoDB", "utf8mb4_bin")}
    assert times == {"datetime(6)"}


def test_release_shards_are_made_for_existing_counters_and_folded_back_on_downgrade(
    empty_url: str, empty_db: Database
) -> None:
    """0008 gives every quota and queue already there its 16 release shards; going back
    to 0007 first gives what the shards hold back to the counters' rows, so the rows
    alone count right again."""
    upgrade(empty_url, "0007_review")
    at = "2026-12-04 00:00:00"
    with empty_db.engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO weave_namespace_quotas (namespace, task_quota, "
                             "outstanding, updated_at) VALUES ('n', 10, 4, :at)"), {"at": at})
        conn.execute(sa.text("INSERT INTO weave_queues (namespace, name, capacity, "
                             "outstanding, created_at, updated_at) VALUES ('n', 'q', 5, 3, "
                             ":at, :at)"), {"at": at})
    upgrade(empty_url, "0008_release_shards")
    shards = sa.text("SELECT counter, COUNT(*), SUM(released) FROM weave_capacity_releases "
                     "GROUP BY counter ORDER BY counter")
    with empty_db.engine.begin() as conn:
        assert [tuple(r) for r in conn.execute(shards)] == [("", 16, 0), ("q", 16, 0)]
        conn.execute(sa.text("UPDATE weave_capacity_releases SET released = 1 "
                             "WHERE shard IN (0, 7)"))  # two units of each given back
    downgrade(empty_url, "0007_review")
    with empty_db.engine.connect() as conn:
        counts = conn.execute(sa.text(
            "SELECT (SELECT outstanding FROM weave_namespace_quotas), "
            "(SELECT outstanding FROM weave_queues)")).one()
    assert tuple(counts) == (2, 1)
    assert "weave_capacity_releases" not in _tables(empty_db)


def test_the_inbox_sequence_starts_above_every_id_already_given(empty_mysql_url: str) -> None:
    """0009 on a database with inbox rows: the blocks the engine takes begin after them."""
    upgrade(empty_mysql_url, "0008_release_shards")
    engine = sa.create_engine(empty_mysql_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(
                "INSERT INTO weave_inbox (id, namespace, event_id, event_type, source_task_id, "
                "source_activation_id, source_revision, snapshot, state, available_at, "
                "row_version, created_at) VALUES (7000, 'n', 'e', 'task.succeeded', 't', 'a', "
                "1, '{}', 'PROCESSED', NOW(6), 1, NOW(6))"))
        upgrade(empty_mysql_url)
        with engine.begin() as conn:
            blocks = [conn.execute(sa.text("SELECT NEXTVAL(weave_inbox_ids)")).scalar_one()
                      for _ in range(2)]
        assert blocks == [7001, 7101]
    finally:
        engine.dispose()
