"""OpenTelemetry tracing of ragkg: one span per request and one per pipeline stage.

The tracer provider is built on first use, once per process, from settings (``TRACING_EXPORTER``,
``OTEL_EXPORTER_OTLP_ENDPOINT``, ``TRACING_MEMORY_SPANS``, ``OTEL_SERVICE_NAME``), never at import.
It is this module's own provider, not OpenTelemetry's global one (which can be set only once per
process), so ``tracing_reset`` can rebuild it when settings change.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.trace import Span, Tracer

from apps.observability.exporters import RingBufferSpanExporter
from apps.observability.metrics import stage_observe

AttributeValue = str | int | float | bool

ATTRIBUTE_PREFIX = "ragkg."
INSTRUMENTATION_NAME = "ragkg"


@dataclass(frozen=True)
class _Tracing:
    provider: trace.TracerProvider
    tracer: Tracer
    memory: RingBufferSpanExporter | None


_lock = threading.Lock()
_current: _Tracing | None = None


def _otlp_exporter() -> OTLPSpanExporter:
    """OTLP over HTTP to ``<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces`` (the library's default when unset)."""
    base = settings.OTEL_EXPORTER_OTLP_ENDPOINT
    return OTLPSpanExporter(endpoint=f"{base.rstrip('/')}/v1/traces" if base else None)


def _build() -> _Tracing:
    """A provider for the configured exporter; ``none`` gives a provider whose spans record nothing."""
    choice = settings.TRACING_EXPORTER
    if choice == "none":
        provider: trace.TracerProvider = trace.NoOpTracerProvider()
        return _Tracing(provider, provider.get_tracer(INSTRUMENTATION_NAME), None)
    sdk = TracerProvider(resource=Resource.create({SERVICE_NAME: settings.OTEL_SERVICE_NAME}))
    memory = RingBufferSpanExporter(settings.TRACING_MEMORY_SPANS) if choice == "memory" else None
    if memory is not None:
        sdk.add_span_processor(SimpleSpanProcessor(memory))
    elif choice == "console":
        sdk.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stdout)))
    else:
        sdk.add_span_processor(BatchSpanProcessor(_otlp_exporter()))
    return _Tracing(sdk, sdk.get_tracer(INSTRUMENTATION_NAME), memory)


def _tracing() -> _Tracing:
    """This process's tracing, built on first use (thread-safe)."""
    global _current
    current = _current
    if current is not None:
        return current
    with _lock:
        if _current is None:
            _current = _build()
        return _current


def _prefixed(attributes: Mapping[str, AttributeValue]) -> dict[str, AttributeValue]:
    return {f"{ATTRIBUTE_PREFIX}{key}": value for key, value in attributes.items()}


def span_set(span: Span, **attributes: AttributeValue) -> None:
    """Set ``attributes`` on ``span``, each name prefixed ``ragkg.`` as ``stage_span`` does."""
    span.set_attributes(_prefixed(attributes))


@contextmanager
def request_span(name: str, **attributes: AttributeValue) -> Iterator[Span]:
    """A span named ``name`` (e.g. ``ragkg.ask``) for one request; stage spans inside are its children.

    An exception is recorded on the span (status ERROR) and re-raised.
    """
    with _tracing().tracer.start_as_current_span(name, attributes=_prefixed(attributes)) as span:
        yield span


@contextmanager
def stage_span(stage: str, **attributes: AttributeValue) -> Iterator[Span]:
    """A span ``ragkg.<stage>`` (child of the current span, if any) with ``ragkg.stage`` and ``attributes``.

    An exception is recorded on the span (status ERROR) and re-raised. On exit, failed or not, the
    elapsed seconds are observed in ``ragkg_stage_seconds{stage=...}``.
    """
    started = time.perf_counter()
    try:
        with request_span(f"{ATTRIBUTE_PREFIX}{stage}", stage=stage, **attributes) as span:
            yield span
    finally:
        stage_observe(stage, time.perf_counter() - started)


def finished_spans() -> list[ReadableSpan]:
    """The spans the ``memory`` exporter holds, oldest first; empty for the other exporters."""
    memory = _tracing().memory
    return memory.spans() if memory is not None else []


def tracing_shutdown() -> None:
    """Flush and close this process's provider; the next span builds a new one from settings."""
    global _current
    with _lock:
        current, _current = _current, None
    if current is not None and isinstance(current.provider, TracerProvider):
        current.provider.shutdown()


def tracing_reset() -> None:
    """For tests: drop the buffered spans and rebuild the provider from the current settings on next use."""
    tracing_shutdown()
