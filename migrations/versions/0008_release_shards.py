"""Release shards (issue 11): capacity given back without the counter's row lock.

``weave_capacity_releases`` holds 16 shards per counter — ``counter`` is "" for a
namespace's task quota, else a queue's name — whose ``released`` a settling task adds to
when it does not hold the counter's row. A counter's outstanding count is its row's
``outstanding`` minus its shards' ``released``; both are BIGINT, since the row counts
every unit ever given back through a shard. Existing quotas and queues get their shards
here (all zero: nothing was given back through one yet).

Revision ID: 0008_release_shards
Revises: 0007_review
Create Date: 2026-12-04

The table is frozen here (explicit types); this file never imports weave_core.schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0008_release_shards"
down_revision: str | None = "0007_review"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_NAME = 128
_SHARDS = 16
_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


def upgrade() -> None:
    releases = op.create_table(
        "weave_capacity_releases",
        sa.Column("namespace", sa.String(_NAME), primary_key=True),
        sa.Column("counter", sa.String(_NAME), primary_key=True),
        sa.Column("shard", sa.SmallInteger(), primary_key=True, autoincrement=False),
        sa.Column("released", sa.BigInteger(), nullable=False),
        **_OPTIONS,
    )
    for table in ("weave_namespace_quotas", "weave_queues"):
        with op.batch_alter_table(table) as batch:
            batch.alter_column("outstanding", type_=sa.BigInteger(),
                               existing_type=sa.Integer(), existing_nullable=False)
    conn = op.get_bind()
    counters = [(row[0], "") for row in conn.execute(
        sa.text("SELECT namespace FROM weave_namespace_quotas"))]
    counters += [(row[0], row[1]) for row in conn.execute(
        sa.text("SELECT namespace, name FROM weave_queues"))]
    rows = [{"namespace": ns, "counter": counter, "shard": shard, "released": 0}
            for ns, counter in counters for shard in range(_SHARDS)]
    for start in range(0, len(rows), 1000):
        op.bulk_insert(releases, rows[start:start + 1000])


def downgrade() -> None:
    # Give the units released through shards back to their counters' rows first, so the
    # rows alone hold the true count again.
    conn = op.get_bind()
    conn.execute(sa.text(
        "UPDATE weave_namespace_quotas SET outstanding = outstanding - COALESCE(("
        "SELECT SUM(r.released) FROM weave_capacity_releases r "
        "WHERE r.namespace = weave_namespace_quotas.namespace AND r.counter = ''), 0)"))
    conn.execute(sa.text(
        "UPDATE weave_queues SET outstanding = outstanding - COALESCE(("
        "SELECT SUM(r.released) FROM weave_capacity_releases r "
        "WHERE r.namespace = weave_queues.namespace AND r.counter = weave_queues.name), 0)"))
    for table in ("weave_namespace_quotas", "weave_queues"):
        with op.batch_alter_table(table) as batch:
            batch.alter_column("outstanding", type_=sa.Integer(),
                               existing_type=sa.BigInteger(), existing_nullable=False)
    op.drop_table("weave_capacity_releases")
