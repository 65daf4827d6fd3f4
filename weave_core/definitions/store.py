"""Publishing and reading immutable definition versions (R-2.3).

A version, once published, never changes. Publishing the same ``(definition_id, version)``
with the same canonical content is an idempotent success (``created=False``); different
content is a :class:`~weave_core.foundation.errors.DefinitionConflictError`. The row and its
one audit
row (action ``definition.published``) commit in the same transaction.

Concurrency: the unique key ``(namespace, definition_id, version)`` decides between racing
publishers; the loser's INSERT fails on it (after the winner commits, on MariaDB), and the
loser reads the winner's row in a fresh transaction, so it sees the committed row whatever
its own snapshot was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.exc import IntegrityError

from weave_core.access.audit import write_audit
from weave_core.access.identity import Principal
from weave_core.definitions.format import ValidatedDefinition, validate_definition
from weave_core.foundation import exactjson
from weave_core.foundation.errors import DefinitionConflictError, NotFoundError, StorageError
from weave_core.foundation.exactjson import JSON
from weave_core.foundation.limits import Limits
from weave_core.plugins.host import PluginHost
from weave_core.storage.db import Database
from weave_core.storage.locks import lock_namespace_shared
from weave_core.storage.schema import weave_definitions

LATEST = "latest"
"""The version selector meaning "the most recently published version" (highest ``seq``)."""

AUDIT_ACTION = "definition.published"
AUDIT_OBJECT_TYPE = "definition"

# Stored documents are our own canonical text: any depth we accepted reads back.


@dataclass(frozen=True)
class DefinitionRecord:
    """One published definition version as stored."""

    namespace: str
    definition_id: str
    version: str
    content_hash: str
    document: JSON
    """The canonical document, parsed exactly (ints and Decimals, never floats)."""
    published_at: datetime
    published_by: str

    def summary(self) -> dict[str, Any]:
        """The record without its document (for lists)."""
        return {
            "namespace": self.namespace,
            "definition_id": self.definition_id,
            "version": self.version,
            "content_hash": self.content_hash,
            "published_at": self.published_at.isoformat() + "Z",
            "published_by": self.published_by,
        }


@dataclass(frozen=True)
class PublishResult:
    """``created`` is True for a new version (HTTP 201), False for an identical one (200)."""

    created: bool
    record: DefinitionRecord


def _record(row: RowMapping) -> DefinitionRecord:
    return DefinitionRecord(
        namespace=row["namespace"],
        definition_id=row["definition_id"],
        version=row["version"],
        content_hash=row["content_hash"],
        document=exactjson.loads_stored(row["document"]),
        published_at=row["published_at"],
        published_by=row["published_by"],
    )


def _version_query(columns: Any, namespace: str, definition_id: str, version: str
                   ) -> sa.Select[Any]:
    t = weave_definitions
    stmt = sa.select(*columns).where(t.c.namespace == namespace,
                                     t.c.definition_id == definition_id)
    if version == LATEST:
        return stmt.order_by(t.c.seq.desc()).limit(1)
    return stmt.where(t.c.version == version)


def _select_version(
    conn: Connection, namespace: str, definition_id: str, version: str
) -> DefinitionRecord | None:
    row = conn.execute(_version_query([weave_definitions], namespace, definition_id,
                                      version)).mappings().first()
    return None if row is None else _record(row)


@dataclass(frozen=True)
class DefinitionHead:
    """Which version a name resolves to, without its document: a start whose program is
    already compiled in this process (versions never change) reads no more than this."""

    namespace: str
    definition_id: str
    version: str
    content_hash: str


def definition_head_txn(
    conn: Connection, namespace: str, definition_id: str, version: str = LATEST
) -> DefinitionHead:
    """:func:`definition_txn` without the document (``NotFoundError`` alike)."""
    t = weave_definitions
    row = conn.execute(_version_query(
        [t.c.namespace, t.c.definition_id, t.c.version, t.c.content_hash], namespace,
        definition_id, version)).first()
    if row is None:
        raise _not_found(definition_id, version)
    return DefinitionHead(row.namespace, row.definition_id, row.version, row.content_hash)


def _not_found(definition_id: str, version: str) -> NotFoundError:
    return NotFoundError(f"definition {definition_id!r} version {version!r} not found",
                         details={"definition_id": definition_id, "version": version})


def object_id(definition_id: str, version: str) -> str:
    """The audit object id of one definition version: ``<definition_id>@<version>``."""
    return f"{definition_id}@{version}"


def publish_definition(
    db: Database,
    host: PluginHost,
    limits: Limits,
    principal: Principal,
    namespace: str,
    document: JSON,
) -> PublishResult:
    """Validate ``document`` and store it as an immutable version of ``namespace``.

    Raises ``ValidationError`` (every problem), ``NotFoundError`` (no such namespace, or a
    principal of another namespace) or ``DefinitionConflictError`` (same version, other
    content; ``details["existing_content_hash"]`` names what is stored).
    """
    if principal.namespace != namespace:
        raise NotFoundError(f"namespace {namespace!r} not found", details={"namespace": namespace})
    validated = validate_definition(document, host, limits)
    return store_definition(db, principal.actor, namespace, validated)


def store_definition(
    db: Database, actor: str, namespace: str, validated: ValidatedDefinition
) -> PublishResult:
    """Store an already validated definition (see :func:`publish_definition`)."""
    text = exactjson.dumps(validated.document)

    def _insert(conn: Connection) -> PublishResult | None:
        if lock_namespace_shared(conn, namespace) is None:
            raise NotFoundError(
                f"namespace {namespace!r} not found", details={"namespace": namespace}
            )
        now = db.now(conn)
        try:
            conn.execute(
                sa.insert(weave_definitions), dict(
                    namespace=namespace,
                    definition_id=validated.definition_id,
                    version=validated.version,
                    content_hash=validated.content_hash,
                    document=text,
                    published_at=now,
                    published_by=actor,
                )
            )
        except IntegrityError:
            return None  # the version exists: compared below, in a fresh transaction
        write_audit(
            conn,
            namespace=namespace,
            actor=actor,
            action=AUDIT_ACTION,
            object_type=AUDIT_OBJECT_TYPE,
            object_id=object_id(validated.definition_id, validated.version),
            metadata={
                "definition_id": validated.definition_id,
                "version": validated.version,
                "content_hash": validated.content_hash,
            },
            at=now,
        )
        record = _select_version(conn, namespace, validated.definition_id, validated.version)
        assert record is not None
        return PublishResult(created=True, record=record)

    result = db.transaction(_insert, name="publish_definition")
    if result is not None:
        return result
    existing = db.read(
        lambda conn: _select_version(conn, namespace, validated.definition_id, validated.version),
        name="publish_definition_existing",
    )
    if existing is None:  # rows are never deleted; a vanished row means storage is broken
        raise StorageError(
            "definition version collided on its key but cannot be read back",
            details={"definition_id": validated.definition_id, "version": validated.version},
        )
    if existing.content_hash != validated.content_hash:
        raise DefinitionConflictError(
            f"definition {validated.definition_id!r} version {validated.version!r} is already "
            "published with different content; publish a new version instead",
            details={
                "definition_id": validated.definition_id,
                "version": validated.version,
                "existing_content_hash": existing.content_hash,
                "content_hash": validated.content_hash,
            },
        )
    return PublishResult(created=False, record=existing)


def get_definition(
    db: Database, namespace: str, definition_id: str, version: str = LATEST
) -> DefinitionRecord:
    """One version (``"latest"``: the most recently published); ``NotFoundError`` if absent."""
    return db.read(lambda conn: definition_txn(conn, namespace, definition_id, version),
                   name="get_definition")


def definition_txn(
    conn: Connection, namespace: str, definition_id: str, version: str = LATEST
) -> DefinitionRecord:
    """:func:`get_definition` inside the caller's transaction."""
    record = _select_version(conn, namespace, definition_id, version)
    if record is None:
        raise _not_found(definition_id, version)
    return record


def list_definitions(db: Database, namespace: str) -> list[DefinitionRecord]:
    """The latest version of every definition of ``namespace``, by definition id."""
    t = weave_definitions
    latest = (
        sa.select(t.c.definition_id, sa.func.max(t.c.seq).label("seq"))
        .where(t.c.namespace == namespace)
        .group_by(t.c.definition_id)
        .subquery()
    )
    stmt = (
        sa.select(t)
        .join(latest, t.c.seq == latest.c.seq)
        .where(t.c.namespace == namespace)
        .order_by(t.c.definition_id)
    )
    rows: Sequence[RowMapping] = db.read(
        lambda conn: conn.execute(stmt).mappings().all(), name="list_definitions"
    )
    return [_record(row) for row in rows]


@dataclass(frozen=True)
class DefinitionCount:
    """One definition of a namespace: its latest version and how many versions exist."""

    definition_id: str
    latest_version: str
    versions: int


def count_definitions(db: Database, namespace: str) -> list[DefinitionCount]:
    """Every definition of ``namespace`` with its latest version and version count (1 query)."""
    t = weave_definitions
    latest = (
        sa.select(
            t.c.definition_id,
            sa.func.max(t.c.seq).label("seq"),
            sa.func.count().label("versions"),
        )
        .where(t.c.namespace == namespace)
        .group_by(t.c.definition_id)
        .subquery()
    )
    stmt = (
        sa.select(t.c.definition_id, t.c.version, latest.c.versions)
        .join(latest, t.c.seq == latest.c.seq)
        .order_by(t.c.definition_id)
    )
    rows = db.read(lambda conn: conn.execute(stmt).all(), name="count_definitions")
    return [DefinitionCount(r.definition_id, r.version, int(r.versions)) for r in rows]


def list_versions(db: Database, namespace: str, definition_id: str) -> list[DefinitionRecord]:
    """Every version of one definition, oldest first; ``NotFoundError`` if there is none."""
    t = weave_definitions
    stmt = (
        sa.select(t)
        .where(t.c.namespace == namespace, t.c.definition_id == definition_id)
        .order_by(t.c.seq)
    )
    rows: Sequence[RowMapping] = db.read(
        lambda conn: conn.execute(stmt).mappings().all(), name="list_versions"
    )
    if not rows:
        raise NotFoundError(
            f"definition {definition_id!r} not found", details={"definition_id": definition_id}
        )
    return [_record(row) for row in rows]


__all__ = [
    "AUDIT_ACTION",
    "LATEST",
    "DefinitionCount",
    "DefinitionHead",
    "DefinitionRecord",
    "PublishResult",
    "count_definitions",
    "definition_head_txn",
    "definition_txn",
    "get_definition",
    "list_definitions",
    "list_versions",
    "object_id",
    "publish_definition",
    "store_definition",
]
