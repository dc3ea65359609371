from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings

from apps.observability.tracing import tracing_reset


@pytest.fixture
def memory_tracing() -> Iterator[None]:
    """Spans kept in memory (the default capacity), on a provider built for this test alone."""
    with override_settings(TRACING_EXPORTER="memory", TRACING_MEMORY_SPANS=2000, OTEL_SERVICE_NAME="ragkg"):
        tracing_reset()
        yield
    tracing_reset()
