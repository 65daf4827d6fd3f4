"""Inbox ids from a sequence on MariaDB (issue 11): a step's inbox row needs no answer.

A step transaction writes its result's inbox row and then names the row's id in the audit
and in the instance's history. With ``AUTO_INCREMENT`` the id comes back only from the
INSERT itself: one round trip of every step waited for it. ``weave_inbox_ids`` hands each
engine process blocks of ids instead (one ``NEXTVAL`` per block, ``INCREMENT BY`` the
block's size): the process numbers its rows itself and the INSERT travels with the
COMMIT. Every inbox row on MariaDB takes its id this way from now on (never mixed with
``AUTO_INCREMENT``, whose counter only follows). The sequence starts above every id
already given. MySQL has no sequences and SQLite needs none: there nothing changes.

Revision ID: 0009_inbox_ids
Revises: 0008_release_shards
Create Date: 2026-12-06

No table is created; this file never imports weave_core.schema.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_inbox_ids"
down_revision: str | None = "0008_release_shards"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BLOCK = 100
"""Ids a process takes at a time (the sequence's step): a restart leaves at most one
block's worth of numbers unused."""


def _mariadb() -> bool:
    return bool(getattr(op.get_bind().dialect, "is_mariadb", False))


def upgrade() -> None:
    if not _mariadb():
        return
    conn = op.get_bind()
    start = int(conn.execute(sa.text("SELECT COALESCE(MAX(id), 0) + 1 FROM weave_inbox"))
                .scalar_one())
    conn.execute(sa.text(f"CREATE SEQUENCE weave_inbox_ids START WITH {start} "
                         f"INCREMENT BY {_BLOCK} NOCACHE"))


def downgrade() -> None:
    if _mariadb():
        op.get_bind().execute(sa.text("DROP SEQUENCE IF EXISTS weave_inbox_ids"))
