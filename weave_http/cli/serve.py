"""``weave serve``: run the API server (uvicorn) on one engine per process.

Before listening it makes sure the database schema is current: SQLite (the embedded
default) is migrated automatically; MySQL/MariaDB is refused with
``error[database_not_migrated]`` unless ``--migrate`` is given, so that a production
schema only changes by an explicit act. It then prints one line saying where it listens
(the real port, also with ``--port 0``) and serves until SIGINT/SIGTERM.

Speed: uvloop and httptools are used when installed (they are dependencies), and the
per-request access log is written only at ``--log-level debug``. ``--workers N`` runs N
engine processes on the one listening socket (uvicorn's supervisor restarts one that
dies): each has its own connection pool and tick, as several ``weave serve`` on one
database always could, and the kernel's locks keep them from doing anything twice.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import socket
import sys
from typing import Any

import uvicorn
from sqlalchemy.engine import make_url
from uvicorn.supervisors import Multiprocess

from weave_core.db import default_database_url
from weave_core.engine import Engine
from weave_core.errors import DatabaseNotMigratedError
from weave_core.limits import Limits
from weave_core.migrate import ensure_current, upgrade
from weave_http.app import create_app

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080


def register(subparsers: Any) -> None:
    """Add ``weave serve`` to the ``weave`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="run the HTTP API server",
        description="Run the Weave HTTP API server (one process). SQLite databases are "
        "migrated automatically; a MySQL/MariaDB database must be current or --migrate "
        "must be given.",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address (default {DEFAULT_HOST})")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT,
        help=f"TCP port (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    parser.add_argument(
        "--database-url",
        default=None,
        help="SQLAlchemy URL (default: $WEAVE_DATABASE_URL, else sqlite:///weave.db)",
    )
    parser.add_argument(
        "--migrate",
        action="store_true",
        help="apply pending migrations first (always done on SQLite)",
    )
    parser.add_argument("--node-id", default=None, help="this node's id (default: host-pid-random)")
    parser.add_argument(
        "--no-tick",
        action="store_true",
        help="do not run the runtime tick loop (tests; another process must run it)",
    )
    parser.add_argument(
        "--workers", type=_workers, default=1,
        help="engine processes sharing the port (default 1; use up to one per core)",
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="server log level (default info)",
    )
    parser.set_defaults(func=run)


MAX_WORKERS = 64
_ENV = "WEAVE_SERVE_WORKER"


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"a whole number from 1 to {MAX_WORKERS}")
    return value


def worker_app() -> Any:
    """The application of one ``--workers`` process (uvicorn imports it in the child):
    its own engine, closed when the server stops."""
    url, node_id, tick = json.loads(os.environ[_ENV])
    node = None if node_id is None else f"{node_id}-{os.getpid()}"
    engine = Engine.open(url, limits=Limits.from_env(), node_id=node)
    return create_app(engine, tick=tick, owns_engine=True)


def _fastest(module: str, fallback: str) -> str:
    """``module`` when it is installed (uvloop, httptools: several times the request rate
    of the pure-Python defaults, BENCHMARKS.md L4), else ``fallback``."""
    return module if importlib.util.find_spec(module) is not None else fallback


def _display_url(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def run(args: argparse.Namespace) -> int:
    url: str = args.database_url or default_database_url()
    is_sqlite = make_url(url).get_backend_name() == "sqlite"
    if is_sqlite and args.workers > 1:
        print("error[invalid_option]: --workers above 1 needs MySQL/MariaDB (a SQLite "
              "database serves one process)", file=sys.stderr)
        return 2
    if is_sqlite or args.migrate:
        upgrade(url)
    engine = Engine.open(url, limits=Limits.from_env(), node_id=args.node_id)
    try:
        try:
            ensure_current(engine.db)
        except DatabaseNotMigratedError as exc:
            raise DatabaseNotMigratedError(
                f"{exc.message} (or start the server with 'weave serve --migrate')",
                details=exc.details,
            ) from exc
        try:
            sock = _bind(args.host, args.port)
        except OSError as exc:
            print(f"error[address_unavailable]: cannot listen on {args.host}:{args.port}: "
                  f"{exc.strerror}", file=sys.stderr)
            return 1
        host, port = sock.getsockname()[:2]
        shown_host = f"[{host}]" if ":" in host else host
        nodes = f"node {engine.node_id}" if args.workers == 1 \
            else f"{args.workers} engine processes"
        print(
            f"weave serve: listening on http://{shown_host}:{port} "
            f"(database {_display_url(url)}, {nodes})",
            flush=True,
        )
        logging.basicConfig(level=args.log_level.upper())
        options: dict[str, Any] = dict(
            log_level=args.log_level,
            # One line per request is a write on the hot path: only at debug.
            access_log=args.log_level == "debug",
            loop=_fastest("uvloop", "asyncio"),
            http=_fastest("httptools", "h11"),
            lifespan="on",
            server_header=False,
            proxy_headers=False,
        )
        if args.workers > 1:
            engine.close()  # each process opens its own
            os.environ[_ENV] = json.dumps([url, args.node_id, not args.no_tick])
            config = uvicorn.Config("weave_http.cli.serve:worker_app", factory=True,
                                    workers=args.workers, **options)
            Multiprocess(config, sockets=[sock]).run()
            return 0
        config = uvicorn.Config(create_app(engine, tick=not args.no_tick), **options)
        server = uvicorn.Server(config)
        server.run(sockets=[sock])
    finally:
        engine.close()
    return 0


__all__ = ["register", "run", "worker_app"]
