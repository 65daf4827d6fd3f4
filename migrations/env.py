"""Alembic environment: driven from code by ``weave_core.migrate`` (``weave migrate``).

``weave_core.migrate`` passes an open connection in ``config.attributes["connection"]``.
Used from the ``alembic`` command line instead, the URL comes from ``sqlalchemy.url`` or
``WEAVE_DATABASE_URL``. Logging is never configured here: the application (or pytest)
owns logging.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from weave_core.db import Database, default_database_url

config = context.config


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        # Migrations freeze their own tables; no autogenerate against the live models.
        target_metadata=None,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        # weave_core.migrate.upgrade(on_applied=...): a line per revision as it is applied
        on_version_apply=config.attributes.get("on_version_apply"),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url") or default_database_url(),
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if isinstance(connection, Connection):
        _run(connection)
        return
    db = Database.from_url(
        config.get_main_option("sqlalchemy.url") or default_database_url(), pool_size=1
    )
    try:
        with db.engine.begin() as conn:
            _run(conn)
    finally:
        db.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
