"""Where spans go: chosen by settings, rebuilt by tracing_reset; the memory buffer stays bounded."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import override_settings
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from apps.observability.exporters import RingBufferSpanExporter
from apps.observability.tracing import finished_spans, stage_span, tracing_reset, tracing_shutdown

BASE_DIR = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def fresh_tracing() -> Iterator[None]:
    tracing_reset()
    yield
    tracing_reset()


def spans_named(*names: str) -> list[ReadableSpan]:
    return [ReadableSpan(name=name) for name in names]


def test_ring_buffer_keeps_only_the_newest_spans() -> None:
    exporter = RingBufferSpanExporter(3)
    assert exporter.export(spans_named("a", "b")) is SpanExportResult.SUCCESS
    exporter.export(spans_named("c", "d", "e"))
    assert [span.name for span in exporter.spans()] == ["c", "d", "e"]
    exporter.clear()
    assert exporter.spans() == []


def test_ring_buffer_is_bounded_under_concurrent_exports() -> None:
    exporter = RingBufferSpanExporter(100)
    batch = spans_named("x")

    def work() -> None:
        for _ in range(200):
            exporter.export(batch)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(exporter.spans()) == 100


def test_ring_buffer_refuses_a_capacity_below_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RingBufferSpanExporter(0)


@override_settings(TRACING_EXPORTER="memory", TRACING_MEMORY_SPANS=3)
def test_memory_exporter_holds_the_last_tracing_memory_spans() -> None:
    tracing_reset()
    for index in range(5):
        with stage_span(f"step{index}"):
            pass
    assert [span.name for span in finished_spans()] == ["ragkg.step2", "ragkg.step3", "ragkg.step4"]


@override_settings(TRACING_EXPORTER="memory")
def test_tracing_reset_empties_the_buffer() -> None:
    with stage_span("before"):
        pass
    assert len(finished_spans()) == 1
    tracing_reset()
    assert finished_spans() == []


@override_settings(TRACING_EXPORTER="memory", OTEL_SERVICE_NAME="ragkg-web-test")
def test_service_name_comes_from_settings() -> None:
    with stage_span("named"):
        pass
    assert finished_spans()[0].resource.attributes["service.name"] == "ragkg-web-test"


@override_settings(TRACING_EXPORTER="none")
def test_none_records_nothing_but_spans_still_work() -> None:
    with stage_span("quiet") as span:
        span.set_attribute("ragkg.ignored", 1)
        assert not span.is_recording()
    assert finished_spans() == []


@override_settings(TRACING_EXPORTER="console")
def test_console_writes_each_span_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    tracing_reset()
    with stage_span("printed", top_k=3):
        pass
    printed = json.loads(capsys.readouterr().out)
    assert printed["name"] == "ragkg.printed"
    assert printed["attributes"] == {"ragkg.stage": "printed", "ragkg.top_k": 3}
    assert finished_spans() == []


class _Collector(http.server.BaseHTTPRequestHandler):
    """A stand-in OTLP/HTTP collector that keeps what it is sent."""

    received: list[tuple[str, str, bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, self.headers["Content-Type"], body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, str, bytes]]]]:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Collector)
    received: list[tuple[str, str, bytes]] = []
    _Collector.received = received
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()
    server.server_close()


def test_otlp_sends_batches_to_the_collector(collector: tuple[str, list[tuple[str, str, bytes]]]) -> None:
    endpoint, received = collector
    with override_settings(TRACING_EXPORTER="otlp", OTEL_EXPORTER_OTLP_ENDPOINT=endpoint + "/"):
        tracing_reset()
        with stage_span("shipped", collection="default"):
            pass
        assert finished_spans() == []
        tracing_shutdown()  # flushes the batch
    assert len(received) == 1
    path, content_type, body = received[0]
    assert path == "/v1/traces"
    assert content_type == "application/x-protobuf"
    assert b"ragkg.shipped" in body and b"ragkg.collection" in body


def exporter_setting(**env: str) -> subprocess.CompletedProcess[str]:
    code = "from django.conf import settings; print(settings.TRACING_EXPORTER)"
    variables = {**os.environ, "TRACING_EXPORTER": "", "OTEL_EXPORTER_OTLP_ENDPOINT": "", **env}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=BASE_DIR, env=variables, capture_output=True, text=True, timeout=60
    )


def test_default_exporter_is_otlp_with_an_endpoint_and_memory_without() -> None:
    assert exporter_setting().stdout.strip() == "memory"
    assert exporter_setting(OTEL_EXPORTER_OTLP_ENDPOINT="http://collector:4318").stdout.strip() == "otlp"
    explicit = exporter_setting(OTEL_EXPORTER_OTLP_ENDPOINT="http://collector:4318", TRACING_EXPORTER="none")
    assert explicit.stdout.strip() == "none"


def test_bad_tracing_settings_stop_the_process() -> None:
    unknown = exporter_setting(TRACING_EXPORTER="jaeger")
    assert unknown.returncode != 0
    assert "TRACING_EXPORTER='jaeger' is not one of otlp, console, memory, none" in unknown.stderr
    not_http = exporter_setting(OTEL_EXPORTER_OTLP_ENDPOINT="grpc://collector:4317")
    assert not_http.returncode != 0
    assert "OTEL_EXPORTER_OTLP_ENDPOINT='grpc://collector:4317' is not a URL with scheme" in not_http.stderr
