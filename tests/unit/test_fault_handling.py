"""Fault handling without services: a generation redelivered after its worker died, answers a whole dead worker
left unfinished, an ingestion job the broker refused, and a vector index save that fails part-way (the previous
version stays)."""

from __future__ import annotations

import datetime
import errno
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from kombu.exceptions import OperationalError
from neo4j.exceptions import ServiceUnavailable

from apps.answers import generation, streams
from apps.answers.generation import WORKER_LOST
from apps.answers.models import Answer
from apps.answers.tasks import answer_generate_task, answers_unfinished_task
from apps.core.dependencies import DependencyUnavailable
from apps.ingest import tasks as ingest_tasks
from apps.ingest.jobs import QUEUE_DOWN, job_create, job_finish, retryable_files
from apps.ingest.models import IngestJob
from apps.ingest.services import FileOutcome
from apps.vectors import persistence
from apps.vectors.errors import IndexSaveFailed
from apps.vectors.ids import vector_ids
from apps.vectors.index import VectorIndex
from apps.vectors.persistence import manifest_read
from apps.vectors.registry import SyncPolicy, VectorRegistry
from apps.vectors.store import store_add
from apps.vectors.types import SpaceConfig, VectorItem

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, dict[str, Any]]]:
    events: list[tuple[str, str, dict[str, Any]]] = []
    monkeypatch.setattr(
        streams, "event_publish", lambda answer_id, event, **data: events.append((answer_id, event, data))
    )
    return events


def an_answer(state: str) -> Answer:
    return Answer.objects.create(question="q", state=state)


def test_a_redelivered_generation_whose_worker_died_fails_the_answer_and_tells_its_readers(
    published: list[Any],
) -> None:
    answer = an_answer(Answer.GENERATING)  # claimed by a worker that was then killed
    answer_generate_task.run(str(answer.id))
    answer.refresh_from_db()
    assert (answer.state, answer.error) == (Answer.FAILED, WORKER_LOST) and answer.finished_at
    assert published == [(str(answer.id), streams.ERROR, {"message": WORKER_LOST})]


@pytest.mark.parametrize("state", [Answer.DONE, Answer.FAILED])
def test_a_duplicate_delivery_of_a_finished_answer_changes_nothing(state: str, published: list[Any]) -> None:
    answer = an_answer(state)
    assert not generation.answer_orphan_fail(str(answer.id))
    answer.refresh_from_db()
    assert answer.state == state and answer.error == "" and published == []


# --- answers a whole dead worker left unfinished (ANSWER_UNFINISHED_AFTER) ------------------------


def asked(state: str, *, seconds_ago: float, user: User | None = None) -> Answer:
    answer = Answer.objects.create(question="Where did Ada Lovelace live?", state=state, user=user)
    Answer.objects.filter(id=answer.id).update(created_at=timezone.now() - datetime.timedelta(seconds=seconds_ago))
    return answer


def state_of(answer: Answer) -> tuple[str, str]:
    answer.refresh_from_db()
    return answer.state, answer.error


def test_only_answers_unfinished_past_the_limit_are_failed(published: list[Any]) -> None:
    limit = settings.ANSWER_UNFINISHED_AFTER
    queued = asked(Answer.RETRIEVED, seconds_ago=limit + 5)
    generating = asked(Answer.GENERATING, seconds_ago=limit + 5)
    young = asked(Answer.GENERATING, seconds_ago=limit - 30)
    done = asked(Answer.DONE, seconds_ago=limit * 3)

    assert answers_unfinished_task() == 2
    for answer in (queued, generating):
        state, error = state_of(answer)
        assert state == Answer.FAILED and f"within {limit} s" in error and "ask again" in error
        assert answer.finished_at is not None
    assert state_of(young) == (Answer.GENERATING, "")
    assert state_of(done) == (Answer.DONE, "")
    assert sorted(event[0] for event in published) == sorted([str(queued.id), str(generating.id)])
    assert {event[1] for event in published} == {streams.ERROR}
    assert generation.answers_unfinished_fail() == 0  # nothing left to fail


def test_a_worker_coming_back_after_the_limit_claims_nothing(published: list[Any]) -> None:
    answer = asked(Answer.RETRIEVED, seconds_ago=settings.ANSWER_UNFINISHED_AFTER + 1)
    generation.answers_unfinished_fail()
    assert not generation.answer_claim(str(answer.id))
    assert not generation.answer_orphan_fail(str(answer.id))
    assert state_of(answer)[0] == Answer.FAILED


def test_opening_an_unfinished_answer_fails_it(client: Client, published: list[Any]) -> None:
    user = User.objects.create_user("asker")
    client.force_login(user)
    stale = asked(Answer.GENERATING, seconds_ago=settings.ANSWER_UNFINISHED_AFTER + 1, user=user)
    response = client.get(f"/ask/{stale.id}/stream")
    body = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    assert body.startswith("event: error") and "never finished" in body
    assert state_of(stale)[0] == Answer.FAILED


def test_the_beat_checks_for_unfinished_answers_every_minute() -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["answers-unfinished"]
    assert entry["task"] == answers_unfinished_task.name and entry["schedule"] == 60.0


# --- ingestion jobs -------------------------------------------------------------------------------


def test_a_job_the_broker_refuses_fails_at_once_and_keeps_its_files(
    monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("Error 111 connecting to 127.0.0.1:16379. Connection refused.")

    monkeypatch.setattr(ingest_tasks.run_ingest_job, "apply_async", refuse)
    # the view turns the error into a 503 (apps.core.middleware)
    with pytest.raises(DependencyUnavailable, match="Redis"), django_capture_on_commit_callbacks(execute=True):
        job_create(collection="c", uploads=[("a.txt", b"Alan Turing")])
    job = IngestJob.objects.get()
    assert (job.state, job.error) == (IngestJob.FAILED, QUEUE_DOWN)
    assert retryable_files(job) == [0], "the upload is kept for a retry"


def test_a_job_waiting_for_neo4j_is_retried_to_done_without_spending_its_attempts(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.INGEST_JOB_MAX_ATTEMPTS = 2
    job = job_create(collection="c", uploads=[("a.txt", b"Alan Turing")], enqueue=False)
    calls: list[int] = []

    def run(*, job_id: str, driver: Any, extractor: Any) -> IngestJob:
        calls.append(IngestJob.objects.get(id=job_id).attempts)
        if len(calls) < 4:  # Neo4j is down for three rounds
            raise ServiceUnavailable("Couldn't connect to 127.0.0.1:17687")
        return job_finish(job_id=job_id, outcomes=[FileOutcome("a.txt", "created", "d1")])

    monkeypatch.setattr(ingest_tasks, "job_run", run)
    monkeypatch.setattr(ingest_tasks, "get_driver", lambda: None)
    monkeypatch.setattr(ingest_tasks, "default_extractor", lambda: None)
    ingest_tasks.run_ingest_job.apply(args=(str(job.id),))  # eager: the retries run at once
    job.refresh_from_db()
    assert calls == [1, 1, 1, 1] and (job.state, job.attempts) == (IngestJob.DONE, 1)


def test_a_job_waiting_too_long_for_neo4j_fails_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    job = job_create(collection="c", uploads=[("a.txt", b"Alan Turing")], enqueue=False)

    def down(**kwargs: Any) -> IngestJob:
        raise ServiceUnavailable("Couldn't connect to 127.0.0.1:17687")

    monkeypatch.setattr(ingest_tasks, "job_run", down)
    monkeypatch.setattr(ingest_tasks, "get_driver", lambda: None)
    monkeypatch.setattr(ingest_tasks, "default_extractor", lambda: None)
    ingest_tasks.run_ingest_job.apply(args=(str(job.id),))
    job.refresh_from_db()
    assert job.state == IngestJob.FAILED and job.error.startswith("Neo4j unavailable")


CONFIG = SpaceConfig(space="text", dim=4, model="m", index_type="flat")


def vectors(rows: int) -> Any:
    return np.random.default_rng(rows).random((rows, 4), dtype=np.float32)


def _store(*names: str) -> None:
    batch = [VectorItem(name, "Chunk", "c") for name in names]
    store_add(CONFIG, vector_ids(names), batch, vectors(len(names)))


@pytest.mark.django_db
def test_a_snapshot_failing_for_lack_of_space_keeps_the_previous_one_and_the_copy_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = VectorRegistry(tmp_path, lambda space: CONFIG, SyncPolicy(interval=0, fraction=0, min_vectors=1))
    _store("n0", "n1", "n2")
    assert registry.get("text").count == 3  # and a local snapshot at change 1
    saved = manifest_read(tmp_path / "text")
    real_write = persistence._write_index

    def disk_full(index: Any) -> Any:
        def write(path: Path) -> None:
            real_write(index)(path)  # part of the file is written, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")

        return write

    monkeypatch.setattr(persistence, "_write_index", disk_full)
    _store("late")
    index = registry.get("text")
    assert isinstance(index, VectorIndex) and index.count == 4, "the copy serves what the store holds"
    assert manifest_read(tmp_path / "text") == saved
    assert not [path for path in (tmp_path / "text").iterdir() if path.name.endswith(".tmp")]
    with pytest.raises(IndexSaveFailed, match="No space left on device"):
        index.save(tmp_path / "text", epoch=saved.epoch, seq=2)


def test_the_search_page_answers_503_when_the_graph_is_down(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.test import Client

    from apps.answers import search, services
    from apps.answers.services import GRAPH_DOWN
    from apps.answers.types import AnswerError

    def down(**kwargs: Any) -> Any:
        raise AnswerError(GRAPH_DOWN, stage="graph_expansion")

    monkeypatch.setattr(search, "default_tools", lambda: None)
    monkeypatch.setattr(services, "answer_ask", down)
    monkeypatch.setattr(services, "answer_start", down)
    page = Client().post("/ask/", {"question": "Who?"})
    assert page.status_code == 503 and GRAPH_DOWN in page.content.decode()
    swapped = Client().post("/ask/", {"question": "Who?"}, headers={"hx-request": "true"})
    assert swapped.status_code == 200 and GRAPH_DOWN in swapped.content.decode(), "htmx swaps only a 200"
