"""A real Celery worker, on both queues, reaching the real Neo4j."""

import pytest

from apps.health.tasks import graph_ping, ping
from ragkg.celery import QUEUE_GPU, QUEUE_INGEST

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("queue", [QUEUE_INGEST, QUEUE_GPU])
def test_worker_consumes_each_queue(live_services: None, queue: str) -> None:
    result = ping.apply_async(queue=queue).get(timeout=30)
    assert result["pong"] is True
    assert isinstance(result["pid"], int)


def test_worker_reaches_neo4j(live_services: None) -> None:
    result = graph_ping.apply_async(queue=QUEUE_INGEST).get(timeout=30)
    assert str(result["server"]).startswith("Neo4j Kernel 5.26")
