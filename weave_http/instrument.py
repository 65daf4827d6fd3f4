"""The outermost layer of the app: each request counted, timed, traced and logged with ids.

:class:`TelemetryMiddleware` counts every answer in ``weave_http_requests_total`` by route
template (never the raw path: ids would make the label set unbounded), times it, and —
when tracing is on — runs it in a SERVER span that continues an incoming W3C
``traceparent`` header. :class:`RequestIdsFilter` puts the ids of the request being served
(``weave_core.observability.observe.REQUEST_IDS``, set by the route wrapper) on every log line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from weave_core.observability import tracing
from weave_core.observability.metrics import child
from weave_core.observability.observe import REQUEST_IDS
from weave_http.metrics import HTTP_REQUESTS, HTTP_SECONDS


class TelemetryMiddleware:
    """Metrics and a span per HTTP request (see the module docstring)."""

    def __init__(self, app: ASGIApp, templates: Mapping[Any, str]) -> None:
        self.app = app
        self.templates = templates
        """Route endpoint → its path template (``/v1/namespaces/{ns}/…``)."""

    def _route(self, scope: Scope) -> str:
        template = self.templates.get(scope.get("endpoint"))
        if template is not None:
            return template
        return "/ui" if str(scope.get("path", "")).startswith("/ui") else "unmatched"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        method = str(scope["method"])
        span = _server_span(scope, method)
        try:
            if span is None:
                await self.app(scope, receive, sending)
            else:
                from opentelemetry import trace

                with trace.use_span(span, end_on_exit=False):
                    await self.app(scope, receive, sending)
        finally:
            route = self._route(scope)
            child(HTTP_REQUESTS, method, route, str(status)).inc()
            child(HTTP_SECONDS, method, route).observe(time.perf_counter() - started)
            if span is not None:
                span.update_name(f"{method} {route}")
                span.set_attribute("http.route", route)
                span.set_attribute("http.response.status_code", status)
                span.end()


def _server_span(scope: Scope, method: str) -> Any:
    tracer = tracing.tracer()
    if tracer is None:
        return None
    from opentelemetry import propagate, trace

    carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", ())
               if k in (b"traceparent", b"tracestate")}
    return tracer.start_span(method, context=propagate.extract(carrier),
                             kind=trace.SpanKind.SERVER,
                             attributes={"http.request.method": method,
                                         "url.path": str(scope.get("path", ""))})


class RequestIdsFilter(logging.Filter):
    """Adds the served request's ids to a line that does not carry them itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        found = REQUEST_IDS.get()
        if found:
            for key, value in found.items():
                if getattr(record, key, None) is None:
                    setattr(record, key, value)
        return True


__all__ = ["RequestIdsFilter", "TelemetryMiddleware"]
