"""Every table of the engine, as SQLAlchemy Core on one ``MetaData``.

Rules (MariaDB from day one; see docs/storage.md):
- ``DATETIME(6)`` for every time (naive UTC, from database time only: ``Database.now``);
- ``VARCHAR`` for every key or indexed column, never TEXT;
- JSON documents are our own canonical text (``exactjson.dumps``) in ``MEDIUMTEXT``,
  never the JSON type, and TEXT columns have no defaults;
- utf8mb4 with a binary collation, so keys compare exactly as on SQLite;
- no foreign keys: integrity comes from the lock order and the transactions;
- an explicit, named index for every scan.

This module is the live model. Migrations never import it: each migration freezes its own
table definitions, and a test checks that the migrated database matches this module.
Namespaces are referenced by their name everywhere.
"""

from __future__ import annotations

from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

metadata = sa.MetaData()

# --- column types --------------------------------------------------------------------

Timestamp: Final = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
"""A naive UTC time with microseconds."""

Document: Final = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
"""Canonical JSON text (up to 16 MiB on MySQL)."""

BigId: Final = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
"""An auto-increment id (SQLite only auto-increments ``INTEGER PRIMARY KEY``)."""

NAME_LENGTH: Final = 128  # namespace names and identifiers (limits.max_id_length)

TABLE_OPTIONS: Final[dict[str, Any]] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


def _namespace() -> sa.Column[str]:
    return sa.Column("namespace", sa.String(NAME_LENGTH), nullable=False)


# --- identity ------------------------------------------------------------------------

# A namespace isolates everything; objects of another namespace are invisible. Its row is
# the identity lock (R-6.2, taken shared by every operation in the namespace).
weave_namespaces = sa.Table(
    "weave_namespaces",
    metadata,
    sa.Column("name", sa.String(NAME_LENGTH), primary_key=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("disabled", sa.Boolean(), nullable=False, server_default=sa.text("0")),
    **TABLE_OPTIONS,
)

# API tokens: only the SHA-256 of the full secret is kept. Looked up by token_id (the
# public part of the token) on every request.
weave_api_tokens = sa.Table(
    "weave_api_tokens",
    metadata,
    sa.Column("token_id", sa.String(32), primary_key=True),
    _namespace(),
    sa.Column("token_hash", sa.CHAR(64), nullable=False),
    sa.Column("permissions", sa.String(255), nullable=False),  # sorted, comma separated
    sa.Column("description", sa.String(255), nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("revoked_at", Timestamp, nullable=True),
    sa.Index("ix_weave_api_tokens_namespace", "namespace"),
    **TABLE_OPTIONS,
)

# --- definitions ---------------------------------------------------------------------

# Immutable definition versions. ``seq`` orders the versions of one definition: "latest"
# is the highest seq.
weave_definitions = sa.Table(
    "weave_definitions",
    metadata,
    sa.Column("seq", BigId, primary_key=True, autoincrement=True),
    _namespace(),
    sa.Column("definition_id", sa.String(NAME_LENGTH), nullable=False),
    sa.Column("version", sa.String(NAME_LENGTH), nullable=False),
    sa.Column("content_hash", sa.CHAR(64), nullable=False),
    sa.Column("document", Document, nullable=False),
    sa.Column("published_at", Timestamp, nullable=False),
    sa.Column("published_by", sa.String(255), nullable=False),
    sa.UniqueConstraint(
        "namespace", "definition_id", "version", name="uq_weave_definitions_version"
    ),
    sa.Index("ix_weave_definitions_latest", "namespace", "definition_id", "seq"),
    **TABLE_OPTIONS,
)

# --- audit ---------------------------------------------------------------------------

# One row per recorded change, written in the transaction of the change. Read
# per object in id order.
weave_audit = sa.Table(
    "weave_audit",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    _namespace(),
    sa.Column("occurred_at", Timestamp, nullable=False),
    sa.Column("actor", sa.String(255), nullable=False),
    sa.Column("action", sa.String(64), nullable=False),
    sa.Column("object_type", sa.String(64), nullable=False),
    sa.Column("object_id", sa.String(255), nullable=False),
    sa.Column("operation_id", sa.String(64), nullable=True),
    sa.Column("metadata", Document, nullable=True),  # canonical JSON
    sa.Index("ix_weave_audit_object", "namespace", "object_type", "object_id", "id"),
    **TABLE_OPTIONS,
)

# --- database time -------------------------------------------------------------------

# One row (id 1): an offset in microseconds that Database.now adds to database time, so
# tests can move time without sleeping. 0 in production.
weave_clock = sa.Table(
    "weave_clock",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
    sa.Column("offset_us", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
    **TABLE_OPTIONS,
)

__all__ = [
    "NAME_LENGTH",
    "TABLE_OPTIONS",
    "BigId",
    "Document",
    "Timestamp",
    "metadata",
    "weave_api_tokens",
    "weave_audit",
    "weave_clock",
    "weave_definitions",
    "weave_namespaces",
]
