"""OpenTelemetry traces of the engine, optional (``pip install weave-engine[otel]``).

Off, and free, until :func:`configure` (``weave serve`` calls :func:`configure_from_env`,
which reads the standard ``OTEL_*`` variables): :func:`span` is then a shared null context.
On, the engine records a span per named transaction (``Database.transaction``) and one
trace per task, that is per instance step: its ids are derived from the task id, so every
process that touches the task (creation, claim, report, consumption) joins the same trace
without storing anything. The root span is written when the task is created (linked to the
span that created it); the claim's span is handed to the worker as a W3C ``traceparent``
and the SDK worker runs the handler under it (weave_sdk/_tracing.py).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
from collections.abc import Mapping
from typing import Any, Final

_NULL: Final = contextlib.nullcontext()
_tracer: Any = None
_forced: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar(
    "weave_forced_ids", default=None)
Attributes = Mapping[str, str | int | float | bool]


def enabled() -> bool:
    return _tracer is not None


def tracer() -> Any:
    """The engine's tracer (None when off), for spans the HTTP layer starts itself."""
    return _tracer


def span(name: str, attributes: Attributes | None = None) -> contextlib.AbstractContextManager[
        Any]:
    """A span around the block, child of the current one (a null context when off)."""
    if _tracer is None:
        return _NULL
    return _tracer.start_as_current_span(name, attributes=attributes)  # type: ignore[no-any-return]


def task_ids(task_id: str) -> tuple[int, int]:
    """The trace id and root span id of a task's trace (a hash of its id: never zero)."""
    digest = hashlib.sha256(b"weave-task:" + task_id.encode()).digest()
    return (int.from_bytes(digest[:16], "big") or 1), (int.from_bytes(digest[16:24], "big") or 1)


def task_created(task_id: str, attributes: Attributes) -> None:
    """Write the root span of ``task_id``'s trace (after the creating commit), linked to
    the current span (the request or transaction that created it)."""
    if _tracer is None:
        return
    from opentelemetry import trace
    from opentelemetry.context import Context

    current = trace.get_current_span().get_span_context()
    links = [trace.Link(current)] if current.is_valid else []
    token = _forced.set(task_ids(task_id))
    try:
        root = _tracer.start_span(f"weave.task {attributes.get('weave.handler', '')}".strip(),
                                  context=Context(), links=links,
                                  attributes={"weave.task_id": task_id, **attributes})
    finally:
        _forced.reset(token)
    root.end()


def task_span(task_id: str, name: str, attributes: Attributes | None = None,
              ) -> contextlib.AbstractContextManager[Any]:
    """A span in ``task_id``'s trace, child of its root, current for the block (a null
    context when off)."""
    if _tracer is None:
        return _NULL
    from opentelemetry import trace

    trace_id, root_id = task_ids(task_id)
    parent = trace.SpanContext(trace_id, root_id, is_remote=True,
                               trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))
    context = trace.set_span_in_context(trace.NonRecordingSpan(parent))
    return _tracer.start_as_current_span(  # type: ignore[no-any-return]
        name, context=context, attributes={"weave.task_id": task_id, **(attributes or {})})


def claimed(task_id: str, attempt_id: str) -> str | None:
    """After a claim committed: the claim's span in the task's trace, as the W3C
    ``traceparent`` the worker continues (None when off)."""
    if _tracer is None:
        return None
    with task_span(task_id, "weave.task.claimed", {"weave.attempt_id": attempt_id}) as span:
        ctx = span.get_span_context()
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def configure(tracer_provider: Any | None) -> None:
    """Trace with ``tracer_provider`` (from :func:`build_provider`), or stop (None)."""
    global _tracer
    _tracer = None if tracer_provider is None else tracer_provider.get_tracer("weave_core")


def build_provider(processor: Any) -> Any:
    """A TracerProvider whose ids let the engine write a task's root span with the task's
    derived ids, exporting through ``processor``; ``OTEL_SERVICE_NAME`` (default
    ``weave``) and ``OTEL_RESOURCE_ATTRIBUTES`` name the resource."""
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    class _TaskIds(RandomIdGenerator):
        def generate_trace_id(self) -> int:
            forced = _forced.get()
            return forced[0] if forced else super().generate_trace_id()

        def generate_span_id(self) -> int:
            forced = _forced.get()
            return forced[1] if forced else super().generate_span_id()

    service = os.environ.get("OTEL_SERVICE_NAME") or "weave"
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service}),
                              id_generator=_TaskIds())
    provider.add_span_processor(processor)
    return provider


class TracingUnavailable(RuntimeError):
    """OTEL_TRACES_EXPORTER asks for traces but the otel extra is not installed."""


def configure_from_env(environ: Mapping[str, str] | None = None) -> str:
    """Configure from ``OTEL_TRACES_EXPORTER`` (``otlp``: OTLP over HTTP/protobuf to
    ``OTEL_EXPORTER_OTLP_ENDPOINT``; ``console``; ``none`` or unset: off). Returns the
    exporter in use; raises :class:`TracingUnavailable` or ``ValueError``."""
    env = os.environ if environ is None else environ
    choice = (env.get("OTEL_TRACES_EXPORTER") or "none").strip().lower()
    if choice == "none":
        configure(None)
        return "none"
    if choice not in ("otlp", "console"):
        raise ValueError(f"OTEL_TRACES_EXPORTER={choice!r}: use otlp, console or none")
    try:
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
        if choice == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise TracingUnavailable(
            f"OTEL_TRACES_EXPORTER={choice} needs the otel extra: "
            "pip install 'weave-engine[otel]'") from exc
    exporter = OTLPSpanExporter() if choice == "otlp" else ConsoleSpanExporter()
    provider = build_provider(BatchSpanProcessor(exporter))
    from opentelemetry import trace

    trace.set_tracer_provider(provider)  # the process's own libraries trace to it too
    configure(provider)
    return choice


__all__ = [
    "TracingUnavailable",
    "build_provider",
    "claimed",
    "configure",
    "configure_from_env",
    "enabled",
    "span",
    "task_created",
    "task_ids",
    "task_span",
    "tracer",
]
