"""Counters and histograms of the pipeline, the queue-depth gauge's fallbacks and GET /metrics."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from apps.observability import metrics
from apps.observability.metrics import REGISTRY, answers_count, generation_observe, metrics_text, queue_keys
from tests.support import free_port


def sample(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


def scraped(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, keyed by name and sorted labels."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.fixture
def broker_depths(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The broker read replaced by a table the test fills."""
    depths: dict[str, int] = {"ingest": 0, "gpu": 0}
    monkeypatch.setattr(metrics, "queue_depths", lambda **_: dict(depths))
    return depths


def test_answers_are_counted_by_outcome() -> None:
    ok_before = sample("ragkg_answers_total", {"outcome": "ok"})
    error_before = sample("ragkg_answers_total", {"outcome": "error"})
    answers_count("ok")
    answers_count("ok")
    answers_count("error")
    assert sample("ragkg_answers_total", {"outcome": "ok"}) == ok_before + 2
    assert sample("ragkg_answers_total", {"outcome": "error"}) == error_before + 1


def test_generation_records_rate_and_first_token() -> None:
    rate_count = sample("ragkg_generation_tokens_per_second_count")
    rate_sum = sample("ragkg_generation_tokens_per_second_sum")
    first_count = sample("ragkg_generation_first_token_seconds_count")
    first_sum = sample("ragkg_generation_first_token_seconds_sum")
    generation_observe(100, 2.0, 0.25)
    assert sample("ragkg_generation_tokens_per_second_count") == rate_count + 1
    assert sample("ragkg_generation_tokens_per_second_sum") == pytest.approx(rate_sum + 50.0)
    assert sample("ragkg_generation_first_token_seconds_count") == first_count + 1
    assert sample("ragkg_generation_first_token_seconds_sum") == pytest.approx(first_sum + 0.25)


def test_an_empty_generation_adds_no_rate_and_no_first_token_when_unknown() -> None:
    rate_count = sample("ragkg_generation_tokens_per_second_count")
    first_count = sample("ragkg_generation_first_token_seconds_count")
    generation_observe(0, 1.5, None)
    generation_observe(10, 0.0, None)
    assert sample("ragkg_generation_tokens_per_second_count") == rate_count
    assert sample("ragkg_generation_first_token_seconds_count") == first_count


def test_queue_keys_follow_kombus_priority_lists() -> None:
    assert queue_keys("gpu") == ["gpu", "gpu\x06\x163", "gpu\x06\x166", "gpu\x06\x169"]


def test_queue_depth_is_reported_per_queue(broker_depths: dict[str, int]) -> None:
    broker_depths.update(ingest=4, gpu=11)
    samples = scraped(metrics_text()[0].decode())
    assert samples[("ragkg_queue_depth", (("queue", "ingest"),))] == 4
    assert samples[("ragkg_queue_depth", (("queue", "gpu"),))] == 11
    assert samples[("ragkg_queue_depth_up", ())] == 1


def test_a_failing_broker_read_reports_up_zero_and_no_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(**_: object) -> dict[str, int]:
        raise RuntimeError("broker exploded")

    monkeypatch.setattr(metrics, "queue_depths", fail)
    samples = scraped(metrics_text()[0].decode())
    assert samples[("ragkg_queue_depth_up", ())] == 0
    assert not [key for key in samples if key[0] == "ragkg_queue_depth"]


def test_an_unreachable_broker_is_reported_as_down() -> None:
    with override_settings(CELERY_BROKER_URL=f"redis://127.0.0.1:{free_port()}/0", METRICS_REDIS_TIMEOUT=0.2):
        payload, content_type = metrics_text()
    assert content_type.startswith("text/plain; version=")
    samples = scraped(payload.decode())
    assert samples[("ragkg_queue_depth_up", ())] == 0
    assert not [key for key in samples if key[0] == "ragkg_queue_depth"]


@pytest.mark.usefixtures("broker_depths")
def test_metrics_view_serves_the_exposition_without_login() -> None:
    answers_count("view-test")
    response = Client().get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    assert "no-cache" in response["Cache-Control"]
    text = response.content.decode()
    assert scraped(text)[("ragkg_answers_total", (("outcome", "view-test"),))] >= 1
    families = {family.name: family.type for family in text_string_to_metric_families(text)}
    assert families["ragkg_stage_seconds"] == "histogram"
    assert families["ragkg_generation_tokens_per_second"] == "histogram"
    assert families["ragkg_queue_depth"] == "gauge"


@pytest.mark.usefixtures("broker_depths")
def test_metrics_view_accepts_only_get() -> None:
    assert Client().post("/metrics").status_code == 405


@override_settings(METRICS_ENABLED=False)
def test_metrics_view_is_404_when_disabled() -> None:
    assert Client().get("/metrics").status_code == 404
