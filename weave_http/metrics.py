"""``GET /metrics``: the process's Prometheus metrics plus the database gauges.

Counters and histograms live in this process (``weave_core.observability.metrics`` and the HTTP ones
below). With ``PROMETHEUS_MULTIPROC_DIR`` set (``weave serve --workers N`` sets it), any
process answers with the sum over every process of the server, read from their files.

The gauges that need a query — instances by non-terminal status, the age of the oldest
due inbox row and of the oldest due pending advance — are read by :class:`DatabaseGauges`
through their indexes (no full table scan: terminal instances are counted by
``weave_instances_finished_total`` instead) and cached for ``CACHE_S`` seconds, so a scrape
every second costs at most one round of three indexed reads per five seconds.
"""

from __future__ import annotations

import hmac
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from sqlalchemy.engine import Connection
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from weave_core.dispatch.model import InboxState
from weave_core.engine import Engine
from weave_core.observability.metrics import LATENCY_BUCKETS
from weave_core.runtime.instances import InstanceStatus
from weave_core.runtime.pending import PendingState
from weave_core.storage.schema import (
    weave_inbox,
    weave_instances,
    weave_namespaces,
    weave_pending_advances,
)
from weave_http.problems import problem_response
from weave_http.routes import ApiRoute, Context

CACHE_S: Final = 5.0
LIVE_STATUSES: Final = tuple(s.value for s in (
    InstanceStatus.RUNNING, InstanceStatus.WAITING, InstanceStatus.CANCELLING,
    InstanceStatus.NEEDS_REVIEW))

HTTP_REQUESTS: Final = Counter(
    "weave_http_requests", "HTTP requests answered, by method, route template and status",
    ["method", "route", "status"])
HTTP_SECONDS: Final = Histogram(
    "weave_http_request_duration_seconds", "HTTP request latency (long polls included), by "
    "method and route template", ["method", "route"], buckets=LATENCY_BUCKETS)


class DatabaseGauges(Collector):
    """The gauges of one database, read at most once per ``CACHE_S`` seconds."""

    def __init__(self, engine: Engine, cache_s: float = CACHE_S) -> None:
        self._engine = engine
        self._cache_s = cache_s
        self._lock = threading.Lock()
        self._at = -cache_s
        self._families: list[Metric] = []

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            if time.monotonic() - self._at >= self._cache_s:
                self._families = self._engine.db.read(self._read, name="metrics_gauges")
                self._at = time.monotonic()
            families = self._families
        yield from families

    def _read(self, conn: Connection) -> list[Metric]:
        db = self._engine.db
        now = db.now(conn)
        i, n = weave_instances, weave_namespaces
        # One index range per namespace and live status (ix_weave_instances_status): the
        # (namespace, status) pairs, never the namespace's terminal instances.
        names = conn.execute(sa.select(n.c.name)).scalars().all()
        pairs = [(name, status) for name in names for status in LIVE_STATUSES]
        counts = conn.execute(
            sa.select(i.c.namespace, i.c.status, sa.func.count())
            .where(sa.tuple_(i.c.namespace, i.c.status).in_(pairs))
            .group_by(i.c.namespace, i.c.status)
        ).all() if pairs else []
        instances = GaugeMetricFamily(
            "weave_instances", "Workflow instances in a non-terminal status now",
            labels=["namespace", "status"])
        found = {(namespace, status): int(count) for namespace, status, count in counts}
        for pair in pairs:  # a zero too: an alert rule needs the series
            instances.add_metric(list(pair), found.get(pair, 0))
        q = weave_inbox
        oldest_inbox = conn.execute(
            sa.select(q.c.available_at)
            .where(q.c.state == InboxState.PENDING.value, q.c.available_at <= now)
            .order_by(q.c.available_at).limit(1)
        ).scalar_one_or_none()
        p = weave_pending_advances
        oldest_pending = conn.execute(
            sa.select(p.c.due_at)
            .where(p.c.state == PendingState.PENDING.value, p.c.due_at <= now)
            .order_by(p.c.due_at).limit(1)
        ).scalar_one_or_none()
        inbox = GaugeMetricFamily(
            "weave_inbox_lag_seconds", "Age of the oldest due, unconsumed task result "
            "(0: none waits)")
        inbox.add_metric([], _age(now, oldest_inbox))
        pending = GaugeMetricFamily(
            "weave_pending_advance_lag_seconds", "Age of the oldest due pending advance "
            "(timer, poll wake-up, deferred step; 0: none waits)")
        pending.add_metric([], _age(now, oldest_pending))
        return [instances, inbox, pending]


def _age(now: Any, oldest: Any) -> float:
    return 0.0 if oldest is None else max(0.0, (now - oldest).total_seconds())


class _Process(Collector):
    """This process's own metrics, or every process's with the multiprocess mode."""

    def __init__(self) -> None:
        folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        if folder:
            self._registry = CollectorRegistry()
            MultiProcessCollector(self._registry, folder)  # type: ignore[no-untyped-call]
        else:
            self._registry = REGISTRY

    def collect(self) -> Iterator[Metric]:
        yield from self._registry.collect()


def metrics_registry(engine: Engine) -> CollectorRegistry:
    """What ``/metrics`` (or ``--metrics-port``) serves for ``engine``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Process())
    registry.register(DatabaseGauges(engine))
    return registry


@dataclass(frozen=True)
class MetricsSettings:
    """What one app's ``/metrics`` serves (``app.state.metrics``; absent: not served)."""

    registry: CollectorRegistry
    token: str | None = None

    @classmethod
    def of(cls, engine: Engine, token: str | None = None) -> MetricsSettings:
        return cls(metrics_registry(engine), token)


async def metrics(request: Request, ctx: Context) -> Response:
    """``GET /metrics``: open, or with a metrics token a bearer token of its own."""
    settings: MetricsSettings | None = getattr(request.app.state, "metrics", None)
    if settings is None:
        return problem_response(status=404, code="not_found", title="Not found",
                                detail="metrics are served on their own port here",
                                instance=METRICS_PATH)
    if settings.token is not None:
        given = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(given, f"Bearer {settings.token}".encode()):
            return problem_response(status=401, code="unauthenticated",
                                    title="Unauthenticated",
                                    detail="GET /metrics needs the metrics token",
                                    instance=METRICS_PATH,
                                    headers={"WWW-Authenticate": "Bearer"})
    body = await run_in_threadpool(generate_latest, settings.registry)
    return Response(body, media_type=CONTENT_TYPE_LATEST)


METRICS_PATH: Final = "/metrics"

API_ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        method="GET", path=METRICS_PATH, endpoint=metrics, operation_id="getMetrics",
        summary="Prometheus metrics (text format); open unless the server has a metrics token",
        permission=None,
        responses={200: (None, "the metrics, Prometheus text format 0.0.4 (text/plain)")},
        errors=(401, 404), tags=("meta",),
    ),
)

__all__ = [
    "API_ROUTES", "CACHE_S", "HTTP_REQUESTS", "HTTP_SECONDS", "DatabaseGauges",
    "MetricsSettings", "metrics", "metrics_registry",
]
