"""The worker's half of a step's trace: the handler runs in a span under the claim's.

A server that traces (OpenTelemetry) hands each claimed task a W3C ``traceparent``; the
worker continues it, so the handler's span — and every span the handler's own code makes —
joins the step's trace beside the server's spans. OpenTelemetry is optional here:
without ``opentelemetry-api`` installed (``pip install weave-sdk[otel]``), or without a
``traceparent`` on the task, the handler is simply called. The spans go to the tracer
provider the application configured (the API's global one).
"""

from __future__ import annotations

import contextlib
from typing import Any, Final

_NULL: Final = contextlib.nullcontext()
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


def traced(task: Any) -> contextlib.AbstractContextManager[Any]:
    """A span ``weave.handler <name>`` continuing ``task.traceparent``, current for the
    block around the handler call (a null context without either). A context manager, not
    a wrapper: it adds no frame to a failing handler's traceback."""
    parent = getattr(task, "traceparent", None)
    api = _api() if parent else None
    if api is None:
        return _NULL
    trace, propagator = api
    context = propagator.extract({"traceparent": parent})
    return trace.get_tracer("weave_sdk").start_as_current_span(  # type: ignore[no-any-return]
        f"weave.handler {task.handler}", context=context, kind=trace.SpanKind.CONSUMER,
        attributes={"weave.task_id": task.task_id, "weave.attempt_id": task.attempt_id,
                    "weave.attempt_no": task.attempt_no, "weave.handler": task.handler,
                    "weave.handler_version": task.handler_version})


__all__ = ["traced"]
