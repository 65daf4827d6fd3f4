"""``weave check``: report every violation of the invariants I1-I7 in a database.

Run it after an incident or an upgrade (docs/operators-guide.md). It only reads. Exit 0:
no violation; exit 1: violations (listed, or as JSON with ``--json``) or an error
(``error[code]: message``).
"""

from __future__ import annotations

import argparse
import json
from datetime import timedelta
from typing import Any

from sqlalchemy.exc import DBAPIError

from weave_core.checks import DEFAULT_GRACE, DEFAULT_LIMIT, INVARIANTS, run_check
from weave_core.foundation.errors import BadRequestError, StorageError, WeaveError
from weave_core.storage.db import Database, default_database_url
from weave_core.storage.migrate import ensure_current


class InvalidDatabaseUrlError(WeaveError):
    code = "invalid_database_url"


class DatabaseUnavailableError(StorageError):
    code = "database_unavailable"


def _run(args: argparse.Namespace) -> int:
    url: str = args.database_url or default_database_url()
    try:
        db = Database.from_url(url, pool_size=1)
    except (ValueError, ImportError) as exc:
        raise InvalidDatabaseUrlError(str(exc)) from None
    try:
        try:
            ensure_current(db)
        except DBAPIError as exc:
            raise DatabaseUnavailableError(
                f"cannot read the database: {str(exc.orig).splitlines()[0]}") from None
        try:
            report = run_check(db, namespaces=args.namespace or None, skip=args.skip,
                               limit=args.limit,
                               grace=timedelta(seconds=args.grace_seconds))
        except ValueError as exc:
            raise BadRequestError(str(exc)) from None
    finally:
        db.dispose()
    if args.json:
        print(json.dumps(report.to_json(), indent=2, sort_keys=True))
    else:
        for violation in report.violations:
            print(violation.line())
        checked = f"{len(report.namespaces)} namespaces"
        if report.skipped:
            checked += f", skipped {', '.join(report.skipped)}"
        if report.ok:
            print(f"ok: no violation of I1-I7 ({checked})")
        else:
            counts = ", ".join(f"{k} {n}" for k, n in report.counts().items() if n)
            print(f"{len(report.violations)} violations ({counts}; {checked})")
    return 0 if report.ok else 1


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add ``check`` to the ``weave`` command."""
    parser = subparsers.add_parser(
        "check", help="report every violation of the invariants I1-I7 in a database",
        description="Read the database and report every violation of the invariants I1-I7 "
        "(exit 1 if there is any). Only reads: safe on a live database.")
    parser.add_argument("--database-url", default=None, metavar="URL",
                        help="database URL (default: $WEAVE_DATABASE_URL, else "
                        "sqlite:///weave.db)")
    parser.add_argument("--namespace", action="append", metavar="NS",
                        help="check only this namespace (repeatable; default: every one)")
    parser.add_argument("--skip", action="append", default=[], metavar="I",
                        help=f"do not check this invariant (repeatable; {', '.join(INVARIANTS)})")
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
                        help=f"violations listed per check and namespace (default "
                        f"{DEFAULT_LIMIT})")
    parser.add_argument("--grace-seconds", type=float,
                        default=DEFAULT_GRACE.total_seconds(), metavar="S",
                        help="how late a due row may be before I6 reports it (default "
                        f"{DEFAULT_GRACE.total_seconds():g})")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=_run)
