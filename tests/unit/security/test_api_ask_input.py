"""Hostile requests to POST /api/ask: every malformed, mistyped or oversized request gets a 4xx JSON
error naming the problem, never a 500, and never reaches retrieval (so never loads a model).

Retrieval is replaced by a stand-in that answers 503 "reached retrieval": a well-formed request must
get that, a malformed one must be stopped before it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pytest_django.fixtures import Settings

from apps.answers import services, views
from apps.answers.types import AnswerError

URL = "/api/ask"
REACHED = "reached retrieval"


@pytest.fixture(autouse=True)
def no_retrieval(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    questions: list[str] = []

    def retrieve(*, question: str, **_: Any) -> None:
        questions.append(question)
        raise AnswerError(REACHED, stage="retrieval", status=503)

    monkeypatch.setattr(views, "default_tools", lambda: None)
    monkeypatch.setattr(services, "retrieve", retrieve)
    return questions


def post(body: bytes | str, content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
    response = Client().post(URL, body, content_type=content_type)
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    return response.status_code, json.loads(response.content)


def test_a_well_formed_request_reaches_retrieval(db: None, no_retrieval: list[str]) -> None:
    assert post(json.dumps({"question": "What is moss?", "generate": False})) == (
        503,
        {"error": REACHED, "stage": "retrieval"},
    )
    assert no_retrieval == ["What is moss?"]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b" ", "not valid JSON"),
        (b"{", "not valid JSON"),
        (b"\xff\xfe\x00garbage", "not valid JSON"),
        (b"null", '"question" string'),
        (b"[]", '"question" string'),
        (b'"question"', '"question" string'),
        (b"{}", '"question" string'),
        (b'{"question": 42}', '"question" string'),
        (b'{"question": null}', '"question" string'),
        (b'{"question": ["a"]}', '"question" string'),
        (b'{"question": "   "}', "Please type a question"),
        (b'{"question": "a\\u0000b"}', "NUL"),
        (b'{"question": "q", "collections": 7}', '"collections"'),
        (b'{"question": "q", "collections": [1, 2]}', '"collections"'),
        (b'{"question": "q", "collections": {"a": 1}}', '"collections"'),
        (b'{"question": "q", "mode": "cypher"}', '"mode"'),
        (b'{"question": "q", "mode": null}', '"mode"'),
        (b'{"question": "q", "generate": "no"}', '"generate"'),
        (b'{"question": "q", "generate": 0}', '"generate"'),
        (b'{"question": "q", "stream": "yes"}', '"stream"'),
        (b"[" * 200_000 + b"]" * 200_000, "not valid JSON"),
    ],
)
def test_malformed_bodies_are_400_with_the_reason(db: None, body: bytes, needle: str, no_retrieval: list[str]) -> None:
    status, payload = post(body)
    assert status == 400
    assert needle in payload["error"]
    assert no_retrieval == []


def test_a_huge_question_is_400(db: None, no_retrieval: list[str]) -> None:
    status, payload = post(json.dumps({"question": "why " * 100_000}))
    assert status == 400 and "too long" in payload["error"]
    assert no_retrieval == []


def test_a_huge_body_is_413(db: None, settings: Settings) -> None:
    body = json.dumps({"question": "q", "padding": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)})
    status, payload = post(body)
    assert status == 413 and "too large" in payload["error"]


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
def test_a_wrong_content_type_is_400(db: None, content_type: str) -> None:
    response = Client().post(URL, b'{"question": "q"}', content_type=content_type)
    assert response.status_code == 400
    assert "Content-Type: application/json" in response.json()["error"]


def test_json_with_a_charset_is_accepted(db: None) -> None:
    assert post(json.dumps({"question": "q"}), "application/json; charset=utf-8")[0] == 503


@pytest.mark.parametrize("method", ["get", "put", "delete", "patch"])
def test_other_methods_are_405_json(db: None, method: str) -> None:
    response = getattr(Client(), method)(URL)
    assert response.status_code == 405
    assert response["Allow"] == "POST" and "POST" in response.json()["error"]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
BODIES = st.dictionaries(
    st.sampled_from(["question", "collections", "collection", "generate", "mode", "stream", "other"]),
    JSON_VALUES,
    max_size=6,
)


@settings(max_examples=50, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=BODIES | JSON_VALUES)
def test_any_json_body_gets_a_json_4xx_or_reaches_retrieval(db: None, body: Any) -> None:
    status, payload = post(json.dumps(body))
    assert status in (400, 503), payload
    assert isinstance(payload["error"], str) and payload["error"]


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=300))
def test_any_bytes_get_a_json_4xx_or_reach_retrieval(db: None, body: bytes) -> None:
    status, payload = post(body)
    assert status in (400, 503) and payload["error"]
