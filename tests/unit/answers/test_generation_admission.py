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
from apps.core import admission
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
    settings.WORKER_QUEUES = ["gpu"]
    generating(2)
    generating(1, age=timedelta(seconds=200))  # its worker died long ago
    Answer.objects.create(question="q", state=Answer.RETRIEVED)
    IngestJob.objects.create(collection="lab", state=IngestJob.RUNNING, started_at=timezone.now())
    assert generation_running() == 2


def test_running_ingestion_jobs_take_slots_of_a_worker_that_serves_both_queues(settings: SettingsWrapper) -> None:
    settings.MANAGED_SERVICES = ["neo4j", "redis", "celery", "web"]
    settings.WORKER_QUEUES = ["ingest", settings.ANSWER_GENERATION_QUEUE]
    settings.CELERY_TASK_TIME_LIMIT = 1800
    generating(1)
    now = timezone.now()
    IngestJob.objects.create(collection="lab", state=IngestJob.RUNNING, started_at=now)
    IngestJob.objects.create(collection="lab", state=IngestJob.RUNNING, started_at=now - timedelta(hours=1))
    IngestJob.objects.create(collection="lab", state=IngestJob.QUEUED)
    assert generation_running() == 2  # the hour-old job outlived the task time limit: its worker is gone
    settings.MANAGED_SERVICES = ["neo4j", "redis", "web"]  # the workers run elsewhere, their queues unknown
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
        "The server is busy (answer generation busy: a new question would wait about 30 s for a worker); "
        "nothing was recorded. Please retry in 10 s."
    )
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
