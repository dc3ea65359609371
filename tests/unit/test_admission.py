"""Admission control with fakes: the per-process limit on expensive requests, the queue-depth
check before generation or ingestion is queued, and the 503 both give (JSON or page, Retry-After)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.test import Client, RequestFactory
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.answers import services
from apps.answers.models import Answer
from apps.answers.pipeline import RetrievalParams
from apps.core import admission
from apps.core.admission import Busy, InflightLimit, expensive, queue_admit, queue_depth
from apps.core.middleware import AdmissionMiddleware


class FakePipeline:
    def __init__(self, lists: dict[str, int]) -> None:
        self.lists = lists
        self.asked: list[str] = []

    def llen(self, name: str) -> None:
        self.asked.append(name)

    def execute(self) -> list[int]:
        return [self.lists.get(name, 0) for name in self.asked]


class FakeRedis:
    def __init__(self, lists: dict[str, int] | None = None, *, down: bool = False) -> None:
        self.lists = lists or {}
        self.down = down

    def pipeline(self, transaction: bool = True) -> FakePipeline:
        if self.down:
            raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379")
        return FakePipeline(self.lists)


def fake(lists: dict[str, int] | None = None, *, down: bool = False) -> Any:
    client = FakeRedis(lists, down=down)
    return lambda: client


def test_the_limit_counts_running_requests_and_zero_means_none() -> None:
    limit = InflightLimit(2)
    assert limit.acquire() and limit.acquire() and not limit.acquire()
    limit.release()
    assert limit.acquire() and limit.running == 2
    unlimited = InflightLimit(0)
    assert all(unlimited.acquire() for _ in range(100))


def test_only_posts_that_retrieve_generate_or_ingest_are_expensive() -> None:
    factory = RequestFactory()
    assert expensive(factory.post("/api/ask")) and expensive(factory.post("/"))
    assert expensive(factory.post("/curation/documents/upload/"))
    client_apis = ["/api/v1/ask", "/api/v1/documents", "/v1/chat/completions", "/mcp"]
    assert all(expensive(factory.post(path)) for path in client_apis)
    cheap = ["/", "/?q=ada", "/healthz", "/static/base.css", "/audit/log/", "/audit/answers/", "/ask/x/stream"]
    assert not any(expensive(factory.get(path)) for path in cheap)


def test_the_depth_counts_the_plain_and_the_prioritised_lists() -> None:
    client: Any = FakeRedis({"gpu": 4, "gpu\x06\x169": 2, "ingest": 50})
    assert queue_depth(client, "gpu") == 6


def test_a_full_queue_is_refused_with_retry_after(settings: SettingsWrapper) -> None:
    settings.SHED_RETRY_AFTER = 12
    assert queue_admit("gpu", limit=3, what="q", client_of=fake({"gpu": 2})) == 2  # room for one more
    with pytest.raises(Busy) as refused:
        queue_admit("gpu", limit=3, what="answer generation queue full", client_of=fake({"gpu": 3}))
    assert refused.value.retry_after == 12
    assert refused.value.message == (
        "The server is busy (answer generation queue full); nothing was recorded. Please retry in 12 s."
    )
    assert "holds 3 (limit 3)" in refused.value.reason


def test_no_limit_or_an_unreachable_redis_admits() -> None:
    assert queue_admit("gpu", limit=0, what="q", client_of=fake({"gpu": 1000})) == 0
    assert queue_admit("gpu", limit=1, what="q", client_of=fake(down=True)) == 0


def blocking_view(started: threading.Event, release: threading.Event) -> Any:
    def view(request: HttpRequest) -> HttpResponse:
        started.set()
        release.wait(5)
        return HttpResponse("done")

    return view


def test_over_the_limit_an_api_ask_gets_json_503_and_cheap_pages_still_pass(settings: SettingsWrapper) -> None:
    settings.MAX_INFLIGHT = 1
    settings.SHED_RETRY_AFTER = 9
    started, release = threading.Event(), threading.Event()
    middleware = AdmissionMiddleware(blocking_view(started, release))
    factory = RequestFactory()
    first: list[HttpResponseBase] = []
    worker = threading.Thread(target=lambda: first.append(middleware(factory.post("/api/ask"))))
    worker.start()
    assert started.wait(5)
    try:
        shed = middleware(factory.post("/api/ask", data={}, content_type="application/json"))
        assert isinstance(shed, HttpResponse) and shed.status_code == 503 and shed["Retry-After"] == "9"
        body = json.loads(shed.content)
        assert body["error"] == "busy" and body["retry_after"] == 9 and "retry in 9 s" in body["message"]
        healthz = AdmissionMiddleware(lambda request: HttpResponse("ok"))
        healthz.limit = middleware.limit  # the same (full) process-wide count
        assert healthz(factory.get("/healthz")).status_code == 200
    finally:
        release.set()
        worker.join(5)
    assert first[0].status_code == 200 and middleware.limit.running == 0
    assert middleware(factory.post("/api/ask")).status_code == 200  # the slot is free again


def test_an_html_post_over_the_limit_gets_the_busy_page(settings: SettingsWrapper) -> None:
    settings.MAX_INFLIGHT = 1
    middleware = AdmissionMiddleware(lambda request: HttpResponse("never"))
    assert middleware.limit.acquire()
    request = RequestFactory().post("/")
    request.user = AnonymousUser()
    response = middleware(request)
    assert isinstance(response, HttpResponse)
    content = response.content.decode()
    assert response.status_code == 503 and response["Retry-After"] == "10"
    assert "<h1>Busy</h1>" in content and "Please retry in 10 s" in content and "Service unavailable" not in content


@pytest.mark.django_db  # closing a response sends request_finished, which checks the connection
def test_a_streaming_response_holds_its_slot_until_closed(settings: SettingsWrapper) -> None:
    settings.MAX_INFLIGHT = 1

    def tokens() -> Iterator[bytes]:
        yield b"a"
        yield b"b"

    middleware = AdmissionMiddleware(lambda request: StreamingHttpResponse(tokens()))
    response = middleware(RequestFactory().post("/api/ask"))
    assert isinstance(response, StreamingHttpResponse) and middleware.limit.running == 1
    assert b"".join(response.streaming_content) == b"ab"  # type: ignore[arg-type]
    assert middleware.limit.running == 1
    response.close()
    response.close()
    assert middleware.limit.running == 0


def test_a_failing_view_releases_its_slot(settings: SettingsWrapper) -> None:
    settings.MAX_INFLIGHT = 1

    def broken(request: HttpRequest) -> HttpResponse:
        raise RuntimeError("boom")

    middleware = AdmissionMiddleware(broken)
    with pytest.raises(RuntimeError):
        middleware(RequestFactory().post("/api/ask"))
    assert middleware.limit.running == 0


@pytest.mark.urls("tests.unit.admission_urls")
def test_busy_raised_by_a_view_is_a_503_page_or_json(client: Client) -> None:
    page = client.get("/busy-page/")
    assert page.status_code == 503 and page["Retry-After"] == "7"
    assert "answer generation queue full" in page.content.decode() and "Traceback" not in page.content.decode()
    api = client.get("/api/busy/")
    assert api.status_code == 503 and api["Retry-After"] == "7" and api.json()["error"] == "busy"


def refused_before_retrieval(monkeypatch: pytest.MonkeyPatch) -> Busy:
    """Ask a question with generation that admission must refuse before retrieval; the Busy it raised."""
    monkeypatch.setattr(services, "answer_retrieve", lambda **kw: pytest.fail("no retrieval when refused"))
    with pytest.raises(Busy) as refused:
        services.answer_start(
            question="Who was Ada?",
            collections=[],
            generate=True,
            mode="graph",
            user=None,
            tools=None,  # type: ignore[arg-type]
            params=RetrievalParams(),
        )
    return refused.value


@pytest.mark.django_db
def test_a_generation_refused_for_a_full_queue_records_no_answer(
    settings: SettingsWrapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.MAX_GPU_QUEUE = 2
    monkeypatch.setattr(admission, "broker_client", fake({settings.ANSWER_GENERATION_QUEUE: 2}))
    refused_before_retrieval(monkeypatch)
    assert not Answer.objects.exists()


@pytest.mark.django_db
def test_the_api_sheds_a_generation_but_not_a_retrieval_only_ask(
    settings: SettingsWrapper, monkeypatch: pytest.MonkeyPatch, client: Client
) -> None:
    settings.MAX_GPU_QUEUE = 1
    monkeypatch.setattr(admission, "broker_client", fake({settings.ANSWER_GENERATION_QUEUE: 5}))
    monkeypatch.setattr("apps.answers.views.default_tools", lambda: None)
    shed = client.post("/api/ask", {"question": "Who was Ada?"}, content_type="application/json")
    assert shed.status_code == 503 and shed["Retry-After"] == "10" and shed.json()["error"] == "busy"
    assert not Answer.objects.exists()
    retrieved: list[bool] = []

    def start(**options: Any) -> dict[str, Any]:
        retrieved.append(options["generate"])
        return {"state": "done"}

    monkeypatch.setattr(services, "answer_ask", start)
    kept = client.post("/api/ask", {"question": "Who?", "generate": False}, content_type="application/json")
    assert kept.status_code == 200 and retrieved == [False]
