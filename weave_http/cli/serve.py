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

Operating it (docs/observability.md, docs/deployment.md): ``--log-format text|json`` and
``--log-level``, one start-up line; ``GET /metrics`` (``--metrics-token``,
``--metrics-port``); traces from the ``OTEL_*`` variables; read time-outs and a bound on
connections (``weave_http.protocol``); a graceful stop that ends long polls at once and
gives requests in flight ``--graceful-timeout`` seconds (``weave_http.shutdown``).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
from typing import Any

import uvicorn
from prometheus_client import start_http_server
from sqlalchemy.engine import make_url
from uvicorn.supervisors import Multiprocess

from weave_core.engine import Engine
from weave_core.foundation.errors import DatabaseNotMigratedError
from weave_core.foundation.limits import Limits
from weave_core.observability import tracing
from weave_core.runtime.tick import DEFAULT_INTERVAL_S
from weave_core.storage.db import default_database_url
from weave_core.storage.migrate import ensure_current, upgrade
from weave_http.app import create_app
from weave_http.instrument import RequestIdsFilter
from weave_http.metrics import metrics_registry
from weave_http.protocol import (
    BODY_TIMEOUT_ATTR,
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_HEADER_TIMEOUT_S,
    HEADER_TIMEOUT_ATTR,
    GuardedHttpToolsProtocol,
)
from weave_sdk.logs import LOG_FORMATS, LOG_LEVELS, LogFormat
from weave_sdk.logs import configure_logging as configure_root

logger = logging.getLogger("weave_http.serve")

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
        choices=list(LOG_LEVELS),
        help="server log level (default info; debug adds one access line per request)",
    )
    parser.add_argument(
        "--log-format", default="text", choices=list(LOG_FORMATS),
        help="text lines, or one JSON object per line (default text)",
    )
    group = parser.add_argument_group("metrics (docs/observability.md)")
    group.add_argument(
        "--metrics-token", default=None, metavar="TOKEN",
        help="GET /metrics asks for 'Authorization: Bearer TOKEN' (default: open; "
        "also $WEAVE_METRICS_TOKEN)",
    )
    group.add_argument(
        "--metrics-port", type=int, default=None, metavar="PORT",
        help="serve /metrics on this port of --host only, not on the API port",
    )
    group = parser.add_argument_group("connections (docs/deployment.md)")
    group.add_argument(
        "--header-timeout", type=_seconds, default=DEFAULT_HEADER_TIMEOUT_S, metavar="S",
        help=f"close a connection whose request headers take longer (default "
        f"{DEFAULT_HEADER_TIMEOUT_S:g} s)",
    )
    group.add_argument(
        "--body-timeout", type=_seconds, default=DEFAULT_BODY_TIMEOUT_S, metavar="S",
        help=f"close a connection whose request body takes longer after its headers "
        f"(default {DEFAULT_BODY_TIMEOUT_S:g} s)",
    )
    group.add_argument(
        "--keep-alive-timeout", type=_seconds, default=DEFAULT_KEEP_ALIVE_S, metavar="S",
        help=f"close an idle kept-alive connection after (default {DEFAULT_KEEP_ALIVE_S:g} s)",
    )
    group.add_argument(
        "--limit-concurrency", type=_positive, default=DEFAULT_CONCURRENCY, metavar="N",
        help=f"answer 503 beyond N open connections and requests per process (default "
        f"{DEFAULT_CONCURRENCY})",
    )
    group.add_argument(
        "--graceful-timeout", type=_seconds, default=DEFAULT_GRACEFUL_S, metavar="S",
        help=f"on SIGTERM: long polls end at once, requests in flight get S seconds to "
        f"finish (default {DEFAULT_GRACEFUL_S:g} s)",
    )
    parser.set_defaults(func=run)


MAX_WORKERS = 64
_ENV = "WEAVE_SERVE_WORKER"


DEFAULT_KEEP_ALIVE_S = 5.0
DEFAULT_CONCURRENCY = 4096
DEFAULT_GRACEFUL_S = 10.0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError("a number of seconds above 0, at most 3600")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError("a whole number above 0")
    return value


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
    url, node_id, tick, log_format, log_level, metrics, token = json.loads(os.environ[_ENV])
    configure_logging(log_format, log_level)
    tracing.configure_from_env()
    node = None if node_id is None else f"{node_id}-{os.getpid()}"
    engine = Engine.open(url, limits=Limits.from_env(), node_id=node)
    return create_app(engine, tick=tick, owns_engine=True, metrics=metrics,
                      metrics_token=token)


def configure_logging(log_format: LogFormat, level: str) -> None:
    """The server's lines in ``log_format`` at ``level`` (the worker's formats,
    ``weave_sdk.logs``), with the ids of the request being served; uvicorn's own loggers go
    the same way (its access lines only at debug)."""
    configure_root(log_format, level).addFilter(RequestIdsFilter())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").setLevel(
        logging.DEBUG if level == "debug" else logging.WARNING)


def _startup_line(engine: Engine, url: str, args: argparse.Namespace, exporter: str) -> None:
    parsed = make_url(url)
    logger.info(
        "weave serve %s starting: database %s on %s, node %s, tick every %g s, plugins %s, "
        "traces %s", _version(), parsed.get_backend_name(),
        parsed.host or parsed.database or "memory", engine.node_id,
        0 if args.no_tick else DEFAULT_INTERVAL_S, ",".join(engine.plugins.plugins()),
        exporter,
        extra={"version": _version(), "dialect": engine.db.dialect,
               "database_host": parsed.host or parsed.database, "node_id": engine.node_id,
               "tick_period_s": 0 if args.no_tick else DEFAULT_INTERVAL_S,
               "plugins": engine.plugins.plugins(), "workers": args.workers},
    )


def _version() -> str:
    try:
        return importlib.metadata.version("weave-engine")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _metrics_server(engine: Engine, host: str, port: int) -> None:
    """``--metrics-port``: prometheus_client's own HTTP server on a daemon thread."""
    start_http_server(port, addr=host, registry=metrics_registry(engine))


def _stopped(signum: int, frame: Any) -> None:
    """The stop signal uvicorn re-raises after its graceful stop: nothing more to do."""


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _fastest(module: str, fallback: str) -> str:
    """``module`` when it is installed (uvloop, httptools: several times the request rate
    of the pure-Python defaults, BENCHMARKS.md L4), else ``fallback``."""
    return module if _has(module) else fallback


def _guard(config: uvicorn.Config, args: argparse.Namespace) -> None:
    """The read time-outs ``GuardedHttpToolsProtocol`` reads from the config (without
    httptools, uvicorn's h11 protocol has only the keep-alive time-out)."""
    setattr(config, HEADER_TIMEOUT_ATTR, args.header_timeout)
    setattr(config, BODY_TIMEOUT_ATTR, args.body_timeout)


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
    configure_logging(args.log_format, args.log_level)
    try:
        exporter = tracing.configure_from_env()
    except (tracing.TracingUnavailable, ValueError) as exc:
        print(f"error[invalid_option]: {exc}", file=sys.stderr)
        return 2
    token = args.metrics_token or os.environ.get("WEAVE_METRICS_TOKEN") or None
    url: str = args.database_url or default_database_url()
    is_sqlite = make_url(url).get_backend_name() == "sqlite"
    if is_sqlite and args.workers > 1:
        print("error[invalid_option]: --workers above 1 needs MySQL/MariaDB (a SQLite "
              "database serves one process)", file=sys.stderr)
        return 2
    if is_sqlite or args.migrate:
        upgrade(url)
    engine = Engine.open(url, limits=Limits.from_env(), node_id=args.node_id)
    own_folder: str | None = None
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
        _startup_line(engine, url, args, exporter)
        metrics_here = args.metrics_port is None
        if args.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            # Each process writes its metrics to files that any of them (or the
            # --metrics-port server) sums (prometheus_client's multiprocess mode).
            own_folder = tempfile.mkdtemp(prefix="weave-metrics-")
            os.environ["PROMETHEUS_MULTIPROC_DIR"] = own_folder
        if not metrics_here:
            try:
                _metrics_server(engine, args.host, args.metrics_port)
            except OSError as exc:
                print(f"error[address_unavailable]: cannot serve metrics on "
                      f"{args.host}:{args.metrics_port}: {exc.strerror}", file=sys.stderr)
                return 1
        print(
            f"weave serve: listening on http://{shown_host}:{port} "
            f"(database {_display_url(url)}, {nodes})",
            flush=True,
        )
        options: dict[str, Any] = dict(
            log_level=args.log_level,
            log_config=None,  # our handler and format (configure_logging)
            # One line per request is a write on the hot path: only at debug.
            access_log=args.log_level == "debug",
            loop=_fastest("uvloop", "asyncio"),
            http=GuardedHttpToolsProtocol if _has("httptools") else "h11",
            lifespan="on",
            server_header=False,
            proxy_headers=False,
            timeout_keep_alive=args.keep_alive_timeout,
            limit_concurrency=args.limit_concurrency,
            timeout_graceful_shutdown=args.graceful_timeout,
        )
        if args.workers > 1:
            os.environ[_ENV] = json.dumps([url, args.node_id, not args.no_tick,
                                           args.log_format, args.log_level, metrics_here,
                                           token])
            config = uvicorn.Config("weave_http.cli.serve:worker_app", factory=True,
                                    workers=args.workers, **options)
            _guard(config, args)
            Multiprocess(config, sockets=[sock]).run()
            logger.info("weave serve stopped")
            return 0
        config = uvicorn.Config(create_app(engine, tick=not args.no_tick, metrics=metrics_here,
                                           metrics_token=token), **options)
        _guard(config, args)
        server = uvicorn.Server(config)
        # uvicorn re-raises the stop signal once it has stopped: let that end this function
        # (the engine closed, exit status 0) instead of killing the process.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, _stopped)
        server.run(sockets=[sock])
        logger.info("weave serve stopped")
    finally:
        engine.close()
        if own_folder is not None:
            shutil.rmtree(own_folder, ignore_errors=True)
    return 0


__all__ = ["register", "run", "worker_app"]
