"""Admission of questions with generation by the wait they would have for a worker: the estimate,
the recent generation times it rests on, and the refusal (Busy, nothing recorded) it leads to."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.answers import admission as answers_admission
from apps.answers.admission import (
    generation_admit,
    generation_running,
    generation_typical_seconds,
    generation_wait,
    worker_seconds,
)
from apps.answers.models import Answer
from apps.answers.services import not_started_message
from apps.core import admission, workers
from apps.core.admission import Busy
from apps.ingest.models import IngestJob
from tests.unit.test_admission import fake, refused_before_retrieval

pytestmark = pytest.mark.django_db


def done(seconds: float, *, age: timedelta = timedelta(0), generate: bool = True) -> Answer:
    """An answer done ``age`` ago whose generation and attribution took ``seconds`` together."""
    timings = {"retrieval": 900.0, "queue": 5000.0, "generation": seconds * 750, "attribution": seconds * 250}
    answer = Answer.objects.create(question="q", generate=generate, state=Answer.DONE, timings_ms=timings)
    Answer.objects.filter(pk=answer.pk).update(finished_at=timezone.now() - age)
    return answer


def generating(count: int, *, age: timedelta = timedelta(0)) -> None:
    for _ in range(count):
        answer = Answer.objects.create(question="q", state=Answer.GENERATING)
        Answer.objects.filter(pk=answer.pk).update(created_at=timezone.now() - age)


def test_the_wait_is_zero_while_a_slot_is_free_and_grows_with_the_generations_ahead() -> None:
    assert generation_wait(waiting=0, running=1, slots=2, typical=40) == 0
    assert generation_wait(waiting=0, running=2, slots=2, typical=40) == 10  # half of one of two
    assert generation_wait(waiting=1, running=2, slots=2, typical=40) == 30
    assert generation_wait(waiting=3, running=1, slots=1, typical=10) == 35


def test_the_typical_time_is_the_median_of_the_latest_answers_done_within_the_hour() -> None:
    assert generation_typical_seconds() is None
    for seconds in (10, 20, 90):
        done(seconds)
    without_attribution = Answer.objects.create(
        question="q", state=Answer.DONE, timings_ms={"generation": 30_000.0}, finished_at=timezone.now()
    )
    assert worker_seconds(without_attribution.timings_ms) == 30
    assert worker_seconds({"retrieval": 10}) is None
    done(500, age=timedelta(hours=2))  # too old to say what a generation takes now
    done(700, generate=False)  # retrieval only: no generation
    Answer.objects.create(question="q", state=Answer.FAILED, timings_ms={"generation": 900_000})
    assert generation_typical_seconds() == 25  # of 10, 20, 30 and 90


def test_running_counts_generating_answers_a_live_worker_may_still_hold(settings: SettingsWrapper) -> None:
    settings.ANSWER_QUEUE_TIMEOUT, settings.ANSWER_GENERATION_TIMEOUT = 15, 120
    generating(2)
    generating(1, age=timedelta(seconds=200))  # its worker died long ago
    Answer.objects.create(question="q", state=Answer.RETRIEVED)
    IngestJob.objects.create(collection="lab", state=IngestJob.RUNNING, started_at=timezone.now())
    assert generation_running() == 2


def test_ingestion_jobs_take_no_generation_slot_they_run_on_another_worker() -> None:
    generating(1)
    IngestJob.objects.create(collection="lab", state=IngestJob.RUNNING, started_at=timezone.now())
    assert generation_running() == 1


def test_a_question_that_would_wait_too_long_is_refused_before_anything_is_recorded(
    settings: SettingsWrapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.MAX_GPU_QUEUE, settings.GENERATION_SLOTS, settings.ANSWER_QUEUE_TIMEOUT = 5, 2, 15
    settings.SHED_RETRY_AFTER = 10
    monkeypatch.setattr(admission, "broker_client", fake({settings.ANSWER_GENERATION_QUEUE: 1}))
    done(40)
    generating(2)
    before = Answer.objects.count()
    refused = refused_before_retrieval(monkeypatch)
    assert refused.message == (
        "All 2 generation slots are busy (2 generating, 1 waiting): a new question would wait about 30 s for "
        "one. Nothing was recorded; please try again in 15 s."
    )
    assert refused.retry_after == 15 and refused.kind == "busy"  # the wait above ANSWER_QUEUE_TIMEOUT
    assert "2 generating, 1 waiting, 2 slots, 40.0 s a generation" in refused.reason
    assert Answer.objects.count() == before


def test_a_short_wait_no_estimate_yet_or_the_check_turned_off_admits(
    settings: SettingsWrapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.MAX_GPU_QUEUE, settings.GENERATION_SLOTS, settings.ANSWER_QUEUE_TIMEOUT = 5, 2, 15
    monkeypatch.setattr(admission, "broker_client", fake({settings.ANSWER_GENERATION_QUEUE: 1}))
    generating(2)
    generation_admit()  # no generation done yet: nothing to estimate from
    done(10)
    generation_admit()  # (1 + 2 - 2 + 1 - 0.5) / 2 * 10 = 7.5 s
    done(40)
    done(40)
    with pytest.raises(Busy):
        generation_admit()
    settings.GENERATION_SLOTS = 0
    generation_admit()
    settings.GENERATION_SLOTS = 2
    monkeypatch.setattr(answers_admission, "generation_running", lambda: 0)
    generation_admit()  # every slot free


def consumers_fake(monkeypatch: pytest.MonkeyPatch, by_queue: dict[str, tuple[str, ...]] | None) -> None:
    """The workers' answer to "who consumes what" (None: they could not be asked)."""
    answer = workers.UNKNOWN if by_queue is None else workers.Consumers(known=True, by_queue=by_queue)
    workers.consumers_forget()
    monkeypatch.setattr(workers, "consumers_ask", lambda **_: answer)


def test_no_worker_on_the_generation_queue_is_said_so_before_retrieval_not_busy(
    settings: SettingsWrapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.MANAGED_SERVICES = ["neo4j", "redis", "celery", "web"]
    settings.WORKER_QUEUES, settings.SHED_RETRY_AFTER = ["ingest", "gpu"], 10
    monkeypatch.setattr(admission, "broker_client", fake({}))
    consumers_fake(monkeypatch, {"ingest": ("ingest@host",), "attribution": ("ingest@host",)})
    before = Answer.objects.count()
    refused = refused_before_retrieval(monkeypatch)
    assert refused.kind == "no_worker" and refused.retry_after == 10
    assert refused.message.startswith(
        f"No generation worker is running (no Celery worker consumes the '{settings.ANSWER_GENERATION_QUEUE}' queue)"
    )
    assert "Fix: make up" in refused.message and "busy" not in refused.message
    assert Answer.objects.count() == before


def test_a_generation_worker_or_an_unknown_answer_admits(
    settings: SettingsWrapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(admission, "broker_client", fake({}))
    consumers_fake(monkeypatch, {settings.ANSWER_GENERATION_QUEUE: ("gpu@host",)})
    generation_admit()
    consumers_fake(monkeypatch, None)  # Redis down or no reply: queueing says what is wrong
    generation_admit()


def test_the_question_not_started_in_time_is_told_why(
    settings: SettingsWrapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.ANSWER_QUEUE_TIMEOUT, settings.GENERATION_SLOTS = 15, 2
    queue = settings.ANSWER_GENERATION_QUEUE
    consumers_fake(monkeypatch, {"ingest": ("ingest@host",)})
    assert not_started_message() == (
        f"No generation worker is running (no Celery worker consumes the '{queue}' queue), so the question was "
        "not answered. The evidence found is shown below."
    )
    consumers_fake(monkeypatch, {queue: ("gpu@host",)})
    assert not_started_message().startswith("All 2 generation slots stayed busy for 15 s, so the question was not")
    consumers_fake(monkeypatch, None)
    assert not_started_message().startswith("No generation worker picked up the question within 15 s.")
