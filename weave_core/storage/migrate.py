"""Alembic driven from code (``weave migrate``) and the schema-currency check.

Alembic is configured here, not from an ini file: ``script_location`` is the folder of the
``migrations`` package, and the connection is handed to ``migrations/env.py`` through
``config.attributes``. Logging is left alone (no ``fileConfig``).

On MySQL an advisory lock (``GET_LOCK``) serialises concurrent ``weave migrate`` runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.script.revision import RevisionError
from sqlalchemy.engine import Connection

import migrations
from weave_core.foundation.errors import DatabaseNotMigratedError, StorageError
from weave_core.storage.db import Database

MIGRATE_LOCK_NAME: Final = "weave_migrate"
MIGRATE_LOCK_TIMEOUT_S: Final = 300


def script_location() -> Path:
    """The folder holding ``env.py`` and ``versions/``."""
    return Path(migrations.__file__).resolve().parent


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic ``Config`` built in code; ``connection`` is what env.py migrates."""
    config = Config()
    config.set_main_option("script_location", str(script_location()))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def script_directory() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    """The one head revision of the code (Alembic raises if the history has several)."""
    head = script_directory().get_current_head()
    if head is None:
        raise StorageError("no migrations found in the migrations package")
    return head


@contextmanager
def _migration_lock(conn: Connection) -> Iterator[None]:
    if conn.dialect.name not in ("mysql", "mariadb"):
        yield  # SQLite: BEGIN IMMEDIATE already serialises writers
        return
    got = conn.execute(
        sa.text("SELECT GET_LOCK(:name, :timeout)"),
        {"name": MIGRATE_LOCK_NAME, "timeout": MIGRATE_LOCK_TIMEOUT_S},
    ).scalar()
    conn.commit()  # GET_LOCK is held by the session, not the transaction
    if got != 1:
        raise StorageError(
            f"another 'weave migrate' held the migration lock for {MIGRATE_LOCK_TIMEOUT_S} s"
        )
    try:
        yield
    finally:
        if conn.in_transaction():
            conn.rollback()
        conn.execute(sa.text("SELECT RELEASE_LOCK(:name)"), {"name": MIGRATE_LOCK_NAME})
        conn.commit()


def _with_connection(url: str, action: Callable[[Connection], None]) -> None:
    db = Database.from_url(url, pool_size=1)
    try:
        with db.engine.connect() as conn, _migration_lock(conn), conn.begin():
            action(conn)
    finally:
        db.dispose()


def upgrade(url: str, revision: str = "head",
            on_applied: Callable[[str, str], None] | None = None) -> None:
    """Apply migrations up to ``revision`` (default: the head); ``on_applied(revision,
    description)`` is called as each one is applied (``weave migrate``'s progress)."""
    def _run(conn: Connection) -> None:
        config = alembic_config(conn)
        if on_applied is not None:
            def _applied(*_: Any, step: Any, **__: Any) -> None:
                if step.is_upgrade:
                    on_applied(step.up_revision_id,
                               " ".join((step.up_revision.doc or "").split()))
            config.attributes["on_version_apply"] = _applied
        command.upgrade(config, revision)
    _with_connection(url, _run)


def downgrade(url: str, revision: str) -> None:
    """Revert migrations down to ``revision`` (``"base"`` removes every table)."""
    _with_connection(url, lambda conn: command.downgrade(alembic_config(conn), revision))


def _current(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def current_revision(url: str) -> str | None:
    """The revision the database is at, or None for an empty (never migrated) database."""
    db = Database.from_url(url, pool_size=1)
    try:
        return db.read(_current, name="current_revision")
    finally:
        db.dispose()


def pending_revisions(current: str | None) -> list[tuple[str, str]]:
    """The revisions after ``current`` (None: every one), oldest first, each with the
    first line of its description (``weave migrate --status``)."""
    scripts = script_directory()
    found = scripts.iterate_revisions(head_revision(), current or "base")
    return [(script.revision, " ".join((script.doc or "").split()))
            for script in reversed(list(found)) if script.revision != current]


def _known(revision: str) -> bool:
    try:
        return script_directory().get_revision(revision) is not None
    except RevisionError:
        return False


def ensure_current(db: Database) -> None:
    """Raise ``DatabaseNotMigratedError`` unless the database is at the code's head."""
    current = db.read(_current, name="ensure_current")
    head = head_revision()
    if current == head:
        return
    if current is None:
        message = "the database has no Weave schema; run `weave migrate` first"
    elif not _known(current):
        message = (
            f"the database is at revision {current}, unknown to this Weave version "
            f"(head {head}): upgrade Weave"
        )
    else:
        message = (
            f"the database is at revision {current} but this Weave needs {head}; "
            "run `weave migrate`"
        )
    raise DatabaseNotMigratedError(message, details={"current": current, "head": head})


def prepare_database(db: Database) -> None:
    """Make ``db`` usable by this code: SQLite is migrated on the spot (it is the embedded
    single-process default); a MySQL database must already be migrated (``weave migrate``).
    """
    if db.dialect == "sqlite":
        upgrade(db.url)
    else:
        ensure_current(db)


__all__ = [
    "alembic_config",
    "current_revision",
    "downgrade",
    "ensure_current",
    "head_revision",
    "prepare_database",
    "script_directory",
    "script_location",
    "upgrade",
]
