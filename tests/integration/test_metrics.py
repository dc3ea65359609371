"""GET /metrics against the real test Redis: the queue-depth gauge reads the broker's lists."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
from django.conf import settings
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import services
from tests.support import free_port

pytestmark = pytest.mark.integration

# A database of the test Redis that no Celery worker consumes, so the pushed messages stay put.
SPARE_DB = 15
GPU_LISTS = ["gpu", "gpu\x06\x169"]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.fixture(scope="module")
def live_redis() -> Iterator[None]:
    """Only the test Redis (the gauge needs nothing else), stopped after unless it was running before."""
    was_running = bool(json.loads(services("status", "--json").stdout)["redis"]["running"])
    result = services("up", "redis", check=False)
    if result.returncode != 0:
        pytest.fail(f"could not start the test Redis:\n{result.stdout}\n{result.stderr}")
    yield
    if not was_running:
        services("down", "redis")


@pytest.fixture
def spare_broker(live_redis: None) -> Iterator[redis.Redis[bytes]]:
    """The test environment's broker, on a database of its own, with the gpu lists emptied after."""
    url = urlunsplit(urlsplit(settings.CELERY_BROKER_URL)._replace(path=f"/{SPARE_DB}"))
    client = redis.Redis.from_url(url)
    client.delete(*GPU_LISTS)
    with override_settings(CELERY_BROKER_URL=url):
        yield client
    client.delete(*GPU_LISTS)
    client.close()


def test_queue_depth_counts_messages_waiting_in_redis(spare_broker: redis.Redis[bytes]) -> None:
    spare_broker.lpush("gpu", *[f'{{"task": "t{i}"}}' for i in range(5)])
    spare_broker.lpush("gpu\x06\x169", '{"task": "urgent"}', '{"task": "urgent2"}')
    response = Client().get("/metrics")
    assert response.status_code == 200
    found = samples(response.content.decode())
    assert found[("ragkg_queue_depth", (("queue", "gpu"),))] == 7
    assert found[("ragkg_queue_depth", (("queue", "ingest"),))] == 0
    assert found[("ragkg_queue_depth_up", ())] == 1
    assert 'ragkg_queue_depth{queue="gpu"} 7.0' in response.content.decode()


def test_unreachable_redis_reports_up_zero(live_redis: None) -> None:
    with override_settings(CELERY_BROKER_URL=f"redis://127.0.0.1:{free_port()}/0"):
        response = Client().get("/metrics")
    assert response.status_code == 200
    found = samples(response.content.decode())
    assert found[("ragkg_queue_depth_up", ())] == 0
    assert not [key for key in found if key[0] == "ragkg_queue_depth"]
