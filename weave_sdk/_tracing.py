"""The worker's half of a step's trace: the handler runs in a span under the claim's.

A server that traces (OpenTelemetry) hands each claimed task a W3C ``traceparent``; the
worker continues it, so the handler's span — and every span the handler's own code makes —
joins the step's trace beside the server's spans. OpenTelemetry is optional here:
without ``opentelemetry-api`` installed (``pip install weave-sdk[otel]``), or without a
``traceparent`` on the task, the handler is simply called. The spans go to the tracer
provider the application configured (the API's global one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
_otel: list[Any] = []


def _api() -> Any:
    """``(trace, TraceContextTextMapPropagator())``, or None without opentelemetry-api."""
    if not _otel:
        try:
            from opentelemetry import trace
            from opentelemetry.trace.propagation.tracecontext import (
                TraceContextTextMapPropagator,
            )
        except ImportError:
            _otel.append(None)
        else:
            _otel.append((trace, TraceContextTextMapPropagator()))
    return _otel[0]


def run_traced(task: Any, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a span ``weave.handler <name>`` continuing ``task.traceparent``."""
    parent = getattr(task, "traceparent", None)
    api = _api() if parent else None
    if api is None:
        return fn(*args)
    trace, propagator = api
    context = propagator.extract({"traceparent": parent})
    tracer = trace.get_tracer("weave_sdk")
    with tracer.start_as_current_span(
        f"weave.handler {task.handler}", context=context, kind=trace.SpanKind.CONSUMER,
        attributes={"weave.task_id": task.task_id, "weave.attempt_id": task.attempt_id,
                    "weave.attempt_no": task.attempt_no, "weave.handler": task.handler,
                    "weave.handler_version": task.handler_version},
    ):
        return fn(*args)


__all__ = ["run_traced"]
