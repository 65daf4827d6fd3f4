"""``weave check``: read a database and report every violation of the invariants I1-I7.

The invariants are what every recorded outcome must satisfy whatever crashed and when
(docs/operators-guide.md lists them): every instance is terminal or explained (I1), at
most one task per activation and poll round and one activation per recovery (I2), one
consumption per source revision (I3), an audit entry for every transition (I4), counters
equal to their rows and within their limits (I5), no due row overdue (I6), and no state
changed by a superseded attempt (I7).

The check only reads. It works namespace by namespace, each namespace in one read
transaction, every query restricted by an index prefix (namespace, instance or task) and
limited to ``limit`` violations per check, so a large database is read in bounded pieces.
Queries are plain SQL shared by MariaDB/MySQL and SQLite.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from weave_core.checks import flow, records
from weave_core.checks.model import CHECKS, CheckContext, Violation
from weave_core.foundation.errors import NotFoundError
from weave_core.runtime.consumer import RETRY_DELAY
from weave_core.runtime.tick import DEFAULT_BUDGET_S, DEFAULT_INTERVAL_S
from weave_core.storage.db import Database

_ = (flow, records)  # importing them registers their checks

INVARIANTS: Final = ("I1", "I2", "I3", "I4", "I5", "I6", "I7")

DEFAULT_GRACE: Final = RETRY_DELAY + timedelta(seconds=DEFAULT_INTERVAL_S + DEFAULT_BUDGET_S)
"""How late a due row may be before I6 reports it: the retry delay plus one tick (its
interval and its budget)."""

DEFAULT_LIMIT: Final = 100
"""Violations reported per check and namespace at most."""


@dataclass(frozen=True)
class CheckReport:
    """What one run of the check found."""

    checked_at: datetime
    namespaces: list[str]
    skipped: list[str]
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def counts(self) -> dict[str, int]:
        found = dict.fromkeys(INVARIANTS, 0)
        for violation in self.violations:
            found[violation.invariant] += 1
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked_at": self.checked_at.isoformat() + "Z",
            "namespaces": len(self.namespaces),
            "skipped": self.skipped,
            "counts": self.counts(),
            "violations": [v.to_json() for v in self.violations],
        }


def _namespaces(conn: Connection, wanted: Sequence[str] | None) -> list[str]:
    names = [str(n) for n in conn.execute(
        sa.text("SELECT name FROM weave_namespaces ORDER BY name")).scalars()]
    if wanted is None:
        return names
    missing = sorted(set(wanted) - set(names))
    if missing:
        raise NotFoundError(f"no namespace {missing[0]!r} in this database",
                            details={"namespaces": missing})
    return sorted(set(wanted))


def run_check(
    db: Database,
    *,
    namespaces: Sequence[str] | None = None,
    skip: Iterable[str] = (),
    limit: int = DEFAULT_LIMIT,
    grace: timedelta = DEFAULT_GRACE,
) -> CheckReport:
    """Check ``namespaces`` (default: every namespace) for violations of I1-I7.

    ``skip`` names invariants not to check (``I6`` when no engine has run since the rows
    became due, e.g. right after restoring a backup); ``grace`` is how late I6 lets a due
    row be. Only reads: safe on a live database.
    """
    skipped = sorted(set(skip))
    unknown = [s for s in skipped if s not in INVARIANTS]
    if unknown:
        raise ValueError(f"unknown invariant {unknown[0]!r}: one of {', '.join(INVARIANTS)}")
    if limit < 1:
        raise ValueError("limit must be at least 1")
    now, names = db.read(lambda c: (db.now(c), _namespaces(c, namespaces)), name="check")
    report = CheckReport(checked_at=now, namespaces=names, skipped=skipped)
    for namespace in names:
        def _one(conn: Connection, namespace: str = namespace) -> list[Violation]:
            ctx = CheckContext(namespace=namespace, now=db.now(conn), limit=limit,
                               grace=grace, dialect=db.dialect)
            found: list[Violation] = []
            for check in CHECKS:
                if check.invariant not in skipped:
                    found += check.run(conn, ctx)
            return found

        report.violations.extend(db.read(_one, name="check"))
    return report


__all__ = ["DEFAULT_GRACE", "DEFAULT_LIMIT", "INVARIANTS", "CheckReport", "Violation",
           "run_check"]
