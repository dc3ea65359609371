"""Answers whose whole worker died: failed with a clear message once ``ANSWER_UNFINISHED_AFTER`` has passed,
by the beat's task and whenever the answer is opened, and never before."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from apps.answers import generation, streams, tasks
from apps.answers.models import Answer

pytestmark = pytest.mark.django_db


@pytest.fixture
def told(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, dict[str, Any]]]:
    """The events published to the answers' streams (instead of Redis)."""
    events: list[tuple[str, str, dict[str, Any]]] = []
    monkeypatch.setattr(streams, "event_publish", lambda *args, **data: events.append((*args, data)))
    return events


def asked(state: str, *, seconds_ago: float, user: User | None = None) -> Answer:
    answer = Answer.objects.create(question="Where did Ada Lovelace live?", state=state, user=user)
    when = timezone.now() - datetime.timedelta(seconds=seconds_ago)
    Answer.objects.filter(id=answer.id).update(created_at=when)
    return answer


def state_of(answer: Answer) -> tuple[str, str]:
    answer.refresh_from_db()
    return answer.state, answer.error


def test_only_answers_unfinished_past_the_limit_are_failed(told: list[Any]) -> None:
    limit = settings.ANSWER_UNFINISHED_AFTER
    queued = asked(Answer.RETRIEVED, seconds_ago=limit + 5)
    generating = asked(Answer.GENERATING, seconds_ago=limit + 5)
    young = asked(Answer.GENERATING, seconds_ago=limit - 30)
    done = asked(Answer.DONE, seconds_ago=limit * 3)

    assert tasks.answers_unfinished_task() == 2
    for answer in (queued, generating):
        state, error = state_of(answer)
        assert state == Answer.FAILED and f"within {limit} s" in error and "ask again" in error
        assert answer.finished_at is not None
    assert state_of(young) == (Answer.GENERATING, "")
    assert state_of(done) == (Answer.DONE, "")
    assert sorted(event[0] for event in told) == sorted([str(queued.id), str(generating.id)])
    assert {event[1] for event in told} == {streams.ERROR}
    assert generation.answers_unfinished_fail() == 0  # nothing left to fail


def test_a_worker_coming_back_later_claims_nothing(told: list[Any]) -> None:
    answer = asked(Answer.RETRIEVED, seconds_ago=settings.ANSWER_UNFINISHED_AFTER + 1)
    generation.answers_unfinished_fail()
    assert not generation.answer_claim(str(answer.id))
    assert not generation.answer_orphan_fail(str(answer.id))
    assert state_of(answer)[0] == Answer.FAILED


def test_opening_an_unfinished_answer_fails_it(client: Client, told: list[Any]) -> None:
    user = User.objects.create_user("asker")
    client.force_login(user)
    stale = asked(Answer.GENERATING, seconds_ago=settings.ANSWER_UNFINISHED_AFTER + 1, user=user)
    response = client.get(f"/ask/{stale.id}/stream")
    body = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    assert body.startswith("event: error") and "never finished" in body
    assert state_of(stale)[0] == Answer.FAILED


def test_the_beat_runs_the_check_every_minute() -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["answers-unfinished"]
    assert entry["task"] == tasks.answers_unfinished_task.name and entry["schedule"] == 60.0
