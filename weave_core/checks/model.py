"""What a check is and what it reports: one registered query per kind of violation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from weave_core.storage.db import Dialect


@dataclass(frozen=True)
class Violation:
    """One broken invariant: which, a stable code, the object and what was found."""

    invariant: str
    code: str
    namespace: str
    object_type: str
    object_id: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"invariant": self.invariant, "code": self.code, "namespace": self.namespace,
                "object_type": self.object_type, "object_id": self.object_id,
                "message": self.message, "details": self.details}

    def line(self) -> str:
        return (f"{self.invariant} {self.code}: {self.namespace}/{self.object_type} "
                f"{self.object_id}: {self.message}")


@dataclass(frozen=True)
class CheckContext:
    """The namespace being checked, database time, and the run's settings."""

    namespace: str
    now: datetime
    limit: int
    grace: timedelta
    dialect: Dialect

    def json_text(self, column: str, path: str) -> str:
        """SQL for a scalar of a canonical JSON text column (strings unquoted)."""
        function = "JSON_VALUE" if self.dialect == "mysql" else "json_extract"
        return f"{function}({column}, '{path}')"

    @property
    def integer(self) -> str:
        """The SQL type a CAST to an integer names."""
        return "SIGNED" if self.dialect == "mysql" else "INTEGER"


Finder = Callable[[Connection, CheckContext], list[Violation]]


@dataclass(frozen=True)
class Check:
    invariant: str
    code: str
    run: Finder


CHECKS: list[Check] = []
"""Every check, in invariant order (the modules of this package add theirs)."""


def check(invariant: str, code: str) -> Callable[[Finder], Finder]:
    """Register a finder as the check of ``code`` (a violation of ``invariant``)."""
    def _add(fn: Finder) -> Finder:
        CHECKS.append(Check(invariant, code, fn))
        CHECKS.sort(key=lambda c: c.invariant)
        return fn
    return _add


def rows(conn: Connection, ctx: CheckContext, sql: str, **params: Any) -> list[RowMapping]:
    """Run one check query for the namespace: ``:ns``, ``:now`` and ``:limit`` are bound;
    list parameters (``IN :x``) expand."""
    stmt = sa.text(sql + " LIMIT :limit")
    for name, value in params.items():
        if isinstance(value, (list, tuple, frozenset, set)):
            stmt = stmt.bindparams(sa.bindparam(name, expanding=True))
            params[name] = sorted(value)
    return list(conn.execute(stmt, {"ns": ctx.namespace, "now": ctx.now,
                                    "limit": ctx.limit, **params}).mappings())


__all__ = ["CHECKS", "Check", "CheckContext", "Violation", "check", "rows"]
