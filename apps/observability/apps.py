from typing import Any

from django.apps import AppConfig


def _flush_spans(**_: Any) -> None:
    """Send the spans a stopping worker process still buffers (the OTLP exporter sends in batches)."""
    from apps.observability.tracing import tracing_shutdown

    tracing_shutdown()


class ObservabilityConfig(AppConfig):
    name = "apps.observability"
    label = "observability"
    verbose_name = "Tracing and metrics"

    def ready(self) -> None:
        from celery.signals import worker_process_shutdown, worker_shutdown

        worker_process_shutdown.connect(_flush_spans, weak=False, dispatch_uid="ragkg.observability.flush")
        worker_shutdown.connect(_flush_spans, weak=False, dispatch_uid="ragkg.observability.flush-main")
