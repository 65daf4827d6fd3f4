"""Administrative commands: ``weave migrate``, ``weave namespace``, ``weave token``.

Each talks to the database directly (``--database-url``, default ``WEAVE_DATABASE_URL``,
else ``sqlite:///weave.db``). ``weave token create`` prints the token alone on the last
line of stdout, so scripts can take it with ``| tail -n 1``; ``--json`` prints one
document instead.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from sqlalchemy.exc import InterfaceError, OperationalError

from weave_core.access.identity import Permission, create_namespace, create_token, revoke_token
from weave_core.storage.db import Database, default_database_url
from weave_core.storage.migrate import (
    current_revision,
    head_revision,
    pending_revisions,
    prepare_database,
    upgrade,
)
from weave_http.cli.failures import CliError, database_message


def _add_database_url(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        default=None,
        metavar="URL",
        help="database URL (default: $WEAVE_DATABASE_URL, else sqlite:///weave.db)",
    )


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print the outcome as one JSON document")


def print_outcome(args: argparse.Namespace, text: str, document: dict[str, Any]) -> None:
    """``text`` for people, or ``document`` as JSON with ``--json``."""
    print(json.dumps(document) if getattr(args, "json", False) else text)


def _url(args: argparse.Namespace) -> str:
    url: str | None = args.database_url
    return url or default_database_url()


def _open(args: argparse.Namespace) -> Database:
    db = Database.from_url(_url(args), pool_size=1)
    try:
        prepare_database(db)
    except (OperationalError, InterfaceError) as exc:
        db.dispose()
        raise CliError("database_unreachable", f"cannot use the database "
                       f"{db.engine.url.render_as_string(hide_password=True)}: "
                       f"{database_message(exc)}") from None
    except BaseException:
        db.dispose()
        raise
    return db


def _migrate(args: argparse.Namespace) -> int:
    """``weave migrate``: apply the pending revisions one at a time, a line for each as it
    is applied (``--json``: one document at the end)."""
    url = _url(args)
    if args.status:
        return _migrate_status(args, url)
    before = current_revision(url)
    applied: list[dict[str, str]] = []

    def _applied(revision: str, doc: str) -> None:
        applied.append({"revision": revision, "description": doc})
        if not args.json:
            print(f"applied {revision}  {doc}", flush=True)

    upgrade(url, on_applied=_applied)
    head = head_revision()
    text = (f"database already at revision {head}" if not applied
            else f"database migrated from {before or 'empty'} to {head}")
    print_outcome(args, text, {"from": before, "to": head, "applied": applied})
    return 0


def _migrate_status(args: argparse.Namespace, url: str) -> int:
    """``weave migrate --status``: the current revision, the code's head and what is
    pending, changing nothing."""
    current = current_revision(url)
    pending = pending_revisions(current)
    if args.json:
        print(json.dumps({"current": current, "head": head_revision(), "pending": [
            {"revision": revision, "description": doc} for revision, doc in pending]}))
        return 0
    print(f"current revision: {current or 'none (empty database)'}")
    print(f"head revision: {head_revision()}")
    if not pending:
        print("up to date: no pending migration")
    for revision, doc in pending:
        print(f"pending: {revision}  {doc}")
    return 0


def _namespace_create(args: argparse.Namespace) -> int:
    db = _open(args)
    try:
        create_namespace(db, args.namespace)
    finally:
        db.dispose()
    print_outcome(args, f"namespace {args.namespace} created",
                  {"namespace": args.namespace, "created": True})
    return 0


def _namespace_switch(args: argparse.Namespace) -> int:
    from weave_core.runtime.namespaces import set_namespace_enabled

    enabled = args.namespace_command == "enable"
    db = _open(args)
    try:
        released = set_namespace_enabled(db, args.namespace, enabled)
    finally:
        db.dispose()
    if enabled:
        text = f"namespace {args.namespace} enabled ({released} blocked instance(s) continue)"
    else:
        text = (f"namespace {args.namespace} disabled: its tokens are refused within a "
                "second; work in flight is still saved, nothing new starts")
    print_outcome(args, text, {"namespace": args.namespace, "enabled": enabled,
                               "released": released if enabled else 0})
    return 0


def _namespace_retention(args: argparse.Namespace) -> int:
    from weave_core.runtime.retention import purged_count, retention_of, set_retention

    db = _open(args)
    try:
        if args.days is not None or args.default:
            set_retention(db, args.namespace, None if args.default else args.days)
        days, default = retention_of(db, args.namespace)
        purged = purged_count(db, args.namespace)
    finally:
        db.dispose()
    print_outcome(args, f"namespace {args.namespace}: settled instances are kept {days} "
                        f"days{' (the default)' if default else ''}; {purged} purged so far",
                  {"namespace": args.namespace, "retention_days": days, "default": default,
                   "purged": purged})
    return 0


def _token_create(args: argparse.Namespace) -> int:
    db = _open(args)
    try:
        token = create_token(db, args.namespace, args.permission, args.description)
    finally:
        db.dispose()
    permissions = sorted(set(args.permission))
    if args.json:
        print(json.dumps({"namespace": args.namespace, "permissions": permissions,
                          "token_id": token.split("_")[1], "token": token}))
        return 0
    print(f"token for namespace {args.namespace} ({', '.join(permissions)}); "
          "it is shown only once:")
    print(token)
    return 0


def _token_revoke(args: argparse.Namespace) -> int:
    db = _open(args)
    try:
        revoke_token(db, args.token_id)
    finally:
        db.dispose()
    print_outcome(args, f"token {args.token_id} revoked",
                  {"token_id": args.token_id, "revoked": True})
    return 0


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add ``migrate``, ``namespace`` and ``token`` to the ``weave`` command."""
    migrate = subparsers.add_parser(
        "migrate", help="apply database migrations", description="Apply every migration."
    )
    _add_database_url(migrate)
    migrate.add_argument("--status", action="store_true",
                         help="show the current and pending revisions; change nothing")
    add_json(migrate)
    migrate.set_defaults(func=_migrate)

    namespace = subparsers.add_parser("namespace", help="manage namespaces")
    ns_commands = namespace.add_subparsers(dest="namespace_command", metavar="COMMAND")
    ns_commands.required = True
    ns_create = ns_commands.add_parser("create", help="create a namespace")
    ns_create.add_argument("namespace", metavar="NS")
    _add_database_url(ns_create)
    add_json(ns_create)
    ns_create.set_defaults(func=_namespace_create)
    for verb, text in (("disable", "disable a namespace: its tokens get 401, nothing new "
                        "starts, work in flight is still saved"),
                       ("enable", "enable a disabled namespace: its instances continue")):
        ns_switch = ns_commands.add_parser(verb, help=text)
        ns_switch.add_argument("namespace", metavar="NS")
        _add_database_url(ns_switch)
        add_json(ns_switch)
        ns_switch.set_defaults(func=_namespace_switch)
    ns_keep = ns_commands.add_parser(
        "retention", help="show or set how long settled instances are kept")
    ns_keep.add_argument("namespace", metavar="NS")
    keep = ns_keep.add_mutually_exclusive_group()
    keep.add_argument("--days", type=int, default=None, metavar="N",
                      help="keep settled instances N days (1-36500)")
    keep.add_argument("--default", action="store_true", help="back to the default (30 days)")
    _add_database_url(ns_keep)
    add_json(ns_keep)
    ns_keep.set_defaults(func=_namespace_retention)

    token = subparsers.add_parser("token", help="manage API tokens")
    token_commands = token.add_subparsers(dest="token_command", metavar="COMMAND")
    token_commands.required = True
    t_create = token_commands.add_parser(
        "create", help="create a token (printed alone on the last line of stdout)"
    )
    t_create.add_argument("--namespace", required=True, metavar="NS")
    t_create.add_argument(
        "--permission",
        required=True,
        action="append",
        choices=[p.value for p in Permission],
        metavar="P",
        help="a permission, repeatable: " + ", ".join(p.value for p in Permission),
    )
    t_create.add_argument("--description", default=None, metavar="D")
    _add_database_url(t_create)
    add_json(t_create)
    t_create.set_defaults(func=_token_create)

    t_revoke = token_commands.add_parser("revoke", help="revoke a token by its id")
    t_revoke.add_argument("token_id", metavar="TOKEN_ID")
    _add_database_url(t_revoke)
    add_json(t_revoke)
    t_revoke.set_defaults(func=_token_revoke)
