"""Asking the Celery workers which queues they consume: the answer read, its bounded wait, its cache."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from apps.core import workers
from apps.core.workers import Consumers, consumers_ask, queue_consumers, queue_unserved, workers_detail

REPLIES = {
    "gpu@host": [{"name": "gpu"}],
    "ingest@host": [{"name": "ingest"}, {"name": "attribution"}],
    "maintenance@host": [{"name": "maintenance"}],
}


def answering(replies: dict[str, Any], *, delay: float = 0.0) -> Callable[[str, float], Callable[[], Any]]:
    def inspect(method: str, timeout: float) -> Callable[[], Any]:
        def call() -> Any:
            time.sleep(delay)
            if method == "stats":
                return {worker: {"pool": {"max-concurrency": 2}} for worker in replies}
            if method == "active":
                return {worker: [{"id": "t"}] if worker == "gpu@host" else [] for worker in replies}
            return replies

        return call

    return inspect


@pytest.fixture
def real_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "consumers_ask", consumers_ask)
    monkeypatch.setattr(workers, "_broker_reachable", lambda: True)


def test_the_workers_answer_says_who_consumes_each_queue(real_ask: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "_inspect", answering(REPLIES))
    answer = consumers_ask(timeout=0.1)
    assert answer.known and answer.of("gpu") == ("gpu@host",) and answer.of("attribution") == ("ingest@host",)
    assert not answer.missing("gpu") and answer.missing("gpu-elsewhere")
    detail = workers_detail(timeout=0.1)
    assert detail.slots["gpu@host"] == 2 and detail.busy == {"gpu@host": 1, "ingest@host": 0, "maintenance@host": 0}
    monkeypatch.setattr(workers, "_inspect", answering({}))
    assert consumers_ask(timeout=0.1).missing("gpu")  # no worker at all answered


def test_a_hung_broadcast_or_a_broker_down_is_unknown_within_a_bound(
    real_ask: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workers, "_inspect", answering(REPLIES, delay=5))
    started = time.monotonic()
    answer = consumers_ask(timeout=0.1)
    assert answer == workers.UNKNOWN and not answer.missing("gpu")  # unknown: callers go on
    assert time.monotonic() - started < 2
    monkeypatch.setattr(workers, "_broker_reachable", lambda: False)
    assert consumers_ask(timeout=0.1) == workers.UNKNOWN


def test_an_answer_is_reused_then_refreshed_in_the_background(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    settings.WORKER_CHECK_TTL = 0.2
    asked: list[float] = []

    def ask(**_: Any) -> Consumers:
        asked.append(time.monotonic())
        return Consumers(known=True, by_queue={"gpu": (f"gpu@{len(asked)}",)})

    monkeypatch.setattr(workers, "consumers_ask", ask)
    workers.consumers_forget()
    assert queue_consumers().of("gpu") == ("gpu@1",)
    assert queue_consumers().of("gpu") == ("gpu@1",) and len(asked) == 1  # within the TTL: kept
    time.sleep(0.3)
    assert queue_consumers().of("gpu") == ("gpu@1",)  # stale: given at once, asked again behind it
    deadline = time.monotonic() + 2
    while len(asked) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert queue_consumers().of("gpu") == ("gpu@2",)
    assert queue_consumers(max_age=0).of("gpu") == ("gpu@3",)  # asked now
    workers.consumers_forget()


def test_no_worker_is_said_only_when_a_second_longer_ask_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = [Consumers(known=True), Consumers(known=True, by_queue={"gpu": ("gpu@slow",)})]
    waits: list[float | None] = []

    def ask(*, timeout: float | None = None) -> Consumers:
        waits.append(timeout)
        return answers.pop(0)

    monkeypatch.setattr(workers, "consumers_ask", ask)
    workers.consumers_forget()
    assert not queue_unserved("gpu")  # the first answer had no reply in time; the second has the worker
    assert waits[0] is None and waits[1] is not None and waits[1] > 0.5
    assert queue_consumers().of("gpu") == ("gpu@slow",)  # the second answer is kept
    workers.consumers_forget()


def test_a_generation_worker_that_answers_late_is_asked_again_not_reported_absent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from apps.health import checks

    asked: list[float] = []
    answers = [
        Consumers(known=True, by_queue={"ingest": ("ingest@host",)}),  # the gpu worker missed the short wait
        Consumers(known=True, by_queue={"gpu": ("gpu@host",)}, slots={"gpu@host": 2}, busy={"gpu@host": 1}),
    ]

    def detail(*, timeout: float | None = None) -> Consumers:
        asked.append(timeout or 0.0)
        return answers[len(asked) - 1]

    monkeypatch.setattr(checks, "_redis_ping", lambda url: None)
    monkeypatch.setattr(checks, "workers_detail", detail)
    result = checks.check_generation()
    assert result.ok and "1 of 2 slots busy" in result.detail
    assert len(asked) == 2 and asked[1] > asked[0]

    asked.clear()
    answers[1] = answers[0]  # still nobody on the queue after the longer wait: absent
    result = checks.check_generation()
    assert not result.ok and "no generation worker is running" in result.detail and len(asked) == 2
