"""Load shedding against the real Redis: a generation queue filled past RAGKG_MAX_GPU_QUEUE makes a
question with generation a 503 with Retry-After (JSON for the API, the busy page for the search
form) and records nothing, so no Answer is left waiting for a generation that was never queued; one
message less and the same queue admits.

The queue filled is one of the test's own (ANSWER_GENERATION_QUEUE points at it), so the running
Celery worker never sees the placeholder messages."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from django.test import Client
from pytest_django.fixtures import Settings

from apps.answers import admission as answers_admission
from apps.answers.models import Answer
from apps.core import workers
from apps.core.admission import PRIORITY_SEPARATOR, queue_admit
from tests.support import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

LIMIT = 3


@pytest.fixture
def full_queue(live_services: None, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    queue = f"gpu-shed-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    settings.ANSWER_GENERATION_QUEUE = queue
    # A worker "consumes" the test's queue, so that the depth is what refuses (see the last test).
    monkeypatch.setattr(answers_admission, "queue_unserved", lambda queue: False)
    settings.MAX_GPU_QUEUE = LIMIT
    settings.SHED_RETRY_AFTER = 11
    client.rpush(queue, *[b"placeholder"] * (LIMIT - 1))
    client.rpush(f"{queue}{PRIORITY_SEPARATOR}9", b"placeholder")  # a prioritised message counts too
    yield queue
    client.delete(queue, f"{queue}{PRIORITY_SEPARATOR}9")
    client.close()


def test_the_real_queue_depth_decides(full_queue: str) -> None:
    queue_admit(full_queue, limit=LIMIT + 1, what="room for one more")
    with pytest.raises(Exception, match="queue full"):
        queue_admit(full_queue, limit=LIMIT, what="queue full")


def test_a_full_generation_queue_sheds_the_api_ask_and_records_nothing(full_queue: str, client: Client) -> None:
    before = Answer.objects.count()
    for stream in (False, True):
        response = client.post(
            "/api/ask", {"question": "Who was Ada Lovelace?", "stream": stream}, content_type="application/json"
        )
        assert response.status_code == 503
        assert response["Retry-After"] == "11"
        body = response.json()
        assert body["error"] == "busy" and body["retry_after"] == 11
        assert "answer generation queue full" in body["message"] and "retry in 11 s" in body["message"]
    assert Answer.objects.count() == before
    assert not Answer.objects.filter(state__in=[Answer.RETRIEVED, Answer.GENERATING]).exists()


def test_a_full_generation_queue_sheds_the_search_form_with_the_busy_page(full_queue: str, client: Client) -> None:
    before = Answer.objects.count()
    response = client.post("/", {"question": "Who was Ada Lovelace?"})
    content = response.content.decode()
    assert response.status_code == 503 and response["Retry-After"] == "11"
    assert "<h1>Busy</h1>" in content and "answer generation queue full" in content
    assert Answer.objects.count() == before


def test_a_question_for_a_queue_no_live_worker_consumes_is_refused_as_no_worker(
    live_services: None, settings: Settings, client: Client
) -> None:
    """The real workers are asked (one broadcast): none consumes this queue, so the 503 says so."""
    queue = f"gpu-unserved-{uuid.uuid4().hex[:8]}"
    settings.ANSWER_GENERATION_QUEUE = queue
    workers.consumers_forget()
    before = Answer.objects.count()
    response = client.post("/api/ask", {"question": "Who was Ada Lovelace?"}, content_type="application/json")
    body = response.json()
    assert response.status_code == 503 and response["Retry-After"] == str(settings.SHED_RETRY_AFTER), body
    assert body["error"] == "no_worker"
    assert body["message"].startswith(f"No generation worker is running (no Celery worker consumes the '{queue}'")
    assert Answer.objects.count() == before
    # The live generation worker answers (the check is not vacuous), once it has finished starting: on a
    # fresh machine its first start prepares the models for a minute or more.
    wait_for("a live generation worker", lambda: workers.consumers_ask(timeout=5.0).of("gpu"), 180.0, 1.0)
    wait_for("a live ingestion worker", lambda: workers.consumers_ask(timeout=5.0).of("ingest"), 60.0, 1.0)
    workers.consumers_forget()
    assert not workers.queue_unserved("gpu")
    assert not workers.queue_unserved("ingest") and workers.queue_unserved(queue)
    workers.consumers_forget()
