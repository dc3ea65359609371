"""Prometheus metrics of ragkg, in a registry of their own, exposed at ``GET /metrics``.

- ``ragkg_stage_seconds{stage}``: time spent in each pipeline stage (observed by ``stage_span``);
- ``ragkg_answers_total{outcome}``: answers given, by outcome;
- ``ragkg_generation_tokens_per_second`` and ``ragkg_generation_first_token_seconds``: generator speed;
- ``ragkg_queue_depth{queue}``: messages waiting in each Celery queue, read from the broker at scrape
  time, with ``ragkg_queue_depth_up`` saying whether the broker answered.

The registry is not the library's global one: tests read it in isolation, and a module imported
twice by a reloading server cannot register the same names twice in a registry that is not shared.
Values live in the process that observed them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import redis
from django.conf import settings
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from ragkg.celery import QUEUE_GPU, QUEUE_INGEST

logger = logging.getLogger(__name__)

REGISTRY = CollectorRegistry()

# 1 ms to 60 s, roughly 1-2.5-5 per decade.
STAGE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0)
TOKENS_PER_SECOND_BUCKETS = (1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 50.0, 75.0, 100.0, 150.0, 200.0, 300.0, 500.0, 1000.0)
FIRST_TOKEN_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

# Celery queues whose depth is reported; kombu's Redis transport keeps priorities 3, 6 and 9 of a
# queue in sub-lists named queue + "\x06\x16" + priority (priority 0 is the queue's own list).
QUEUES = (QUEUE_INGEST, QUEUE_GPU)
PRIORITY_SEPARATOR = "\x06\x16"
PRIORITY_STEPS = (3, 6, 9)

STAGE_SECONDS = Histogram(
    "ragkg_stage_seconds",
    "Seconds spent in one stage of the pipeline.",
    ["stage"],
    buckets=STAGE_BUCKETS,
    registry=REGISTRY,
)
ANSWERS = Counter("ragkg_answers", "Answers given, by outcome.", ["outcome"], registry=REGISTRY)
ANSWER_CACHE = Counter(
    "ragkg_answer_cache", "Questions looked up in the answer cache, by result.", ["result"], registry=REGISTRY
)
TOKENS_PER_SECOND = Histogram(
    "ragkg_generation_tokens_per_second",
    "Generated tokens per second of generation, one observation per answer.",
    buckets=TOKENS_PER_SECOND_BUCKETS,
    registry=REGISTRY,
)
FIRST_TOKEN_SECONDS = Histogram(
    "ragkg_generation_first_token_seconds",
    "Seconds from the start of generation to its first token.",
    buckets=FIRST_TOKEN_BUCKETS,
    registry=REGISTRY,
)


def stage_observe(stage: str, seconds: float) -> None:
    """Record ``seconds`` spent in ``stage`` (``stage_span`` does this for every span)."""
    STAGE_SECONDS.labels(stage=stage).observe(seconds)


def answers_count(outcome: str) -> None:
    """Count one answer with ``outcome`` (a small fixed set of words, e.g. ok, no_context, error)."""
    ANSWERS.labels(outcome=outcome).inc()


def answer_cache_count(hit: bool) -> None:
    ANSWER_CACHE.labels(result="hit" if hit else "miss").inc()


def generation_observe(tokens: int, seconds: float, first_token_seconds: float | None) -> None:
    """Record one generation: ``tokens`` produced in ``seconds``; an empty or instant one adds no rate."""
    if tokens > 0 and seconds > 0:
        TOKENS_PER_SECOND.observe(tokens / seconds)
    if first_token_seconds is not None and first_token_seconds >= 0:
        FIRST_TOKEN_SECONDS.observe(first_token_seconds)


def queue_keys(queue: str) -> list[str]:
    """The Redis lists holding ``queue``'s messages: its own and one per priority step."""
    return [queue, *(f"{queue}{PRIORITY_SEPARATOR}{step}" for step in PRIORITY_STEPS)]


def queue_depths(*, broker_url: str, timeout: float) -> dict[str, int]:
    """Messages waiting in each of ``QUEUES``, with one pipelined round trip; raises on any Redis error."""
    client = redis.Redis.from_url(broker_url, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        pipe = client.pipeline(transaction=False)
        for queue in QUEUES:
            for key in queue_keys(queue):
                pipe.llen(key)
        lengths = [int(length) for length in pipe.execute()]
    finally:
        client.close()
    per_queue = len(PRIORITY_STEPS) + 1
    return {queue: sum(lengths[i * per_queue : (i + 1) * per_queue]) for i, queue in enumerate(QUEUES)}


class QueueDepthCollector:
    """Reads the Celery queues' depth from the broker at each scrape; never raises.

    When the broker cannot be read the scrape carries ``ragkg_queue_depth_up 0`` and no depth.
    """

    def describe(self) -> Iterable[Metric]:
        return [self._depth_family(), self._up_family()]

    def collect(self) -> Iterable[Metric]:
        up = self._up_family()
        try:
            depths = queue_depths(broker_url=settings.CELERY_BROKER_URL, timeout=settings.METRICS_REDIS_TIMEOUT)
        except Exception as exc:  # a scrape must succeed whatever the broker does
            logger.warning("queue depth: cannot read the broker: %s: %s", type(exc).__name__, exc)
            up.add_metric([], 0)
            return [up]
        depth = self._depth_family()
        for queue, count in depths.items():
            depth.add_metric([queue], count)
        up.add_metric([], 1)
        return [depth, up]

    @staticmethod
    def _depth_family() -> GaugeMetricFamily:
        return GaugeMetricFamily("ragkg_queue_depth", "Messages waiting in a Celery queue.", labels=["queue"])

    @staticmethod
    def _up_family() -> GaugeMetricFamily:
        return GaugeMetricFamily("ragkg_queue_depth_up", "1 when the broker answered the queue-depth read, else 0.")


REGISTRY.register(QueueDepthCollector())


def metrics_text() -> tuple[bytes, str]:
    """Every metric in the Prometheus text format, with the content type to serve it with."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
