"""OpenAI-compatible chat (/v1/models, /v1/chat/completions) with asking replaced by fakes: keys,
request checks (each naming the parameter at fault, nothing recorded), model and mode, the question
from the messages, the response shapes, and the server-sent events of a streamed answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings

from apps.accounts import apikeys, throttle
from apps.answers import services
from apps.answers.followup import refers_back
from apps.answers.models import Answer
from apps.answers.prompt import NOT_FOUND
from apps.answers.types import AnswerError
from apps.api import asking
from apps.api.openai_chat import OpenAIError, question_condition
from apps.core.admission import Busy

pytestmark = pytest.mark.django_db

TEXT = "The society was founded in 1912. Its first president was Gwendolyn Pryce."
SOURCE = {
    "id": "c" * 32,
    "number": 1,
    "kind": "chunk",
    "document": "society.txt",
    "document_id": "d" * 32,
    "collection": "moss",
    "text": TEXT,
    "score": 0.9,
    "paths": [["c" * 32]],
    "sentences": [[0, 32], [33, 73]],
}
CITED = "Gwendolyn Pryce was the first president [1]."
CITATION = {"start": 0, "end": 44, "sources": [1], "marker_start": 39, "marker_end": 43}
SUPPORT = {"number": 1, "id": "c" * 32, "sentence": 1, "start": 33, "end": 73, "score": 0.8}
TOKENS = [{"text": "Gwendolyn", "start": 0, "end": 9, "sources": [SUPPORT]}]
QUESTION = [{"role": "user", "content": "Who was the first president of the society?"}]


@dataclass
class Asked:
    """What the fakes were asked, and what they answer."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)
    refusal: Exception | None = None


def an_answer(user: User | None, **fields: Any) -> Answer:
    values: dict[str, Any] = {
        "question": "Who was the first president of the society?",
        "state": Answer.DONE,
        "answer": CITED,
        "generated": "Gwendolyn Pryce was the first president.",
        "citations": [CITATION],
        "sources": [SOURCE],
        "prompt_tokens": 120,
        "generation": {"tokens": 11, "seconds": 0.5},
        "user": user,
        **fields,
    }
    return Answer.objects.create(**values)


@pytest.fixture(autouse=True)
def no_throttle_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """The key checks' failure counts live in Redis: none here."""
    monkeypatch.setattr(throttle, "key_refusal", lambda **_: None)
    monkeypatch.setattr(throttle, "key_failed", lambda **_: None)


@pytest.fixture
def kim(db: None) -> User:
    return User.objects.create_user("kim")


@pytest.fixture
def api(kim: User) -> Client:
    secret = apikeys.key_create(user=kim, name="tests").secret
    return Client(headers={"authorization": f"Bearer {secret}"})


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> Asked:
    """``asking.ask`` and ``asking.ask_start`` replaced: an answer is recorded as the real ones would."""
    record = Asked()

    def ask(**options: Any) -> dict[str, Any]:
        record.calls.append(options)
        if record.refusal is not None:
            raise record.refusal
        result = services.answer_result(an_answer(options["user"], **record.fields))
        return {**result, "tokens": TOKENS}

    def ask_start(**options: Any) -> Answer:
        record.calls.append(options)
        if record.refusal is not None:
            raise record.refusal
        return an_answer(options["user"], state=Answer.RETRIEVED, answer="", citations=[], generation={})

    monkeypatch.setattr(asking, "ask", ask)
    monkeypatch.setattr(asking, "ask_start", ask_start)
    return record


def post(client: Client, body: Any, **extra: Any) -> Any:
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    return client.post("/v1/chat/completions", data=data, content_type="application/json", **extra)


def error_of(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.content[:500]
    error = response.json()["error"]
    assert set(error) == {"message", "type", "code", "param"}
    return dict(error)


# --- keys and models ---------------------------------------------------------------------------


def test_without_a_key_both_endpoints_say_how_to_send_one(kim: User) -> None:
    browser = Client()
    browser.force_login(kim)  # a session is not enough: only bearer keys get through
    for response in (browser.get("/v1/models"), post(browser, {"model": "ragkg", "messages": QUESTION})):
        error = error_of(response, 401)
        assert "Authorization: Bearer KEY" in error["message"] and "apikeys create" in error["message"]
        assert error["code"] == "missing_api_key"
    assert not Answer.objects.exists()


def test_an_unknown_or_revoked_key_gets_401(api: Client, kim: User, asked: Asked) -> None:
    wrong = Client(headers={"authorization": "Bearer rkg_aaaaaaaaaaaa_" + "x" * 43})
    assert error_of(wrong.get("/v1/models"), 401)["code"] == "invalid_api_key"
    key = apikeys.keys_of(kim).get()
    apikeys.key_revoke(key_id=key.key_id)
    assert error_of(post(api, {"model": "ragkg", "messages": QUESTION}), 401)["code"] == "invalid_api_key"
    assert asked.calls == [] and not Answer.objects.exists()


def test_the_models_are_the_answering_modes(api: Client) -> None:
    listed = api.get("/v1/models").json()
    assert listed["object"] == "list"
    assert [(m["id"], m["object"], m["owned_by"]) for m in listed["data"]] == [
        ("ragkg", "model", "ragkg"),
        ("ragkg-dense", "model", "ragkg"),
    ]
    assert len({m["created"] for m in listed["data"]}) == 1
    refused = api.post("/v1/models")
    assert error_of(refused, 405)["code"] == "method_not_allowed" and refused["Allow"] == "GET"
    one = api.get("/v1/models/ragkg-dense").json()
    assert (one["id"], one["object"]) == ("ragkg-dense", "model")
    assert error_of(api.get("/v1/models/gpt-4o"), 404)["code"] == "model_not_found"


# --- request checks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "code", "param"),
    [
        ("{not json", 400, "invalid_json", None),
        ('["a list"]', 400, "invalid_value", None),
        ({"messages": QUESTION}, 400, "missing_required_parameter", "model"),
        ({"model": 7, "messages": QUESTION}, 400, "invalid_value", "model"),
        ({"model": "gpt-4o", "messages": QUESTION}, 404, "model_not_found", "model"),
        ({"model": "ragkg"}, 400, "invalid_value", "messages"),
        ({"model": "ragkg", "messages": []}, 400, "invalid_value", "messages"),
        ({"model": "ragkg", "messages": ["hi"]}, 400, "invalid_value", "messages[0]"),
        (
            {"model": "ragkg", "messages": [*QUESTION, {"role": "tool", "content": "x", "tool_call_id": "1"}]},
            400,
            "invalid_value",
            "messages[1].role",
        ),
        (
            {"model": "ragkg", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
            400,
            "invalid_value",
            "messages[0].content[0]",
        ),
        ({"model": "ragkg", "messages": [{"role": "user", "content": 5}]}, 400, "invalid_value", "messages[0].content"),
        ({"model": "ragkg", "messages": [{"role": "user", "content": "a\x00b"}]}, 400, "invalid_value", None),
        ({"model": "ragkg", "messages": [{"role": "system", "content": "Be brief."}]}, 400, "invalid_value", None),
        ({"model": "ragkg", "messages": [{"role": "user", "content": "   "}]}, 400, "invalid_value", None),
        ({"model": "ragkg", "messages": [{"role": "user", "content": "x" * 2001}]}, 400, "invalid_value", None),
        ({"model": "ragkg", "messages": QUESTION, "stream": "yes"}, 400, "invalid_value", "stream"),
        ({"model": "ragkg", "messages": QUESTION, "collections": [1]}, 400, "invalid_value", "collections"),
        ({"model": "ragkg", "messages": QUESTION, "mode": "fast"}, 400, "invalid_value", "mode"),
        ({"model": "ragkg", "messages": QUESTION, "colections": ["a"]}, 400, "unknown_parameter", "colections"),
        (
            {"model": "ragkg", "messages": QUESTION, "tools": [{"type": "function"}]},
            400,
            "unsupported_parameter",
            "tools",
        ),
        ({"model": "ragkg", "messages": QUESTION, "tool_choice": "required"}, 400, "unsupported_parameter", None),
        ({"model": "ragkg", "messages": QUESTION, "n": 2}, 400, "unsupported_parameter", "n"),
        ({"model": "ragkg", "messages": QUESTION, "logprobs": True}, 400, "unsupported_parameter", "logprobs"),
        (
            {"model": "ragkg", "messages": QUESTION, "response_format": {"type": "json_object"}},
            400,
            "unsupported_parameter",
            "response_format",
        ),
    ],
)
def test_a_bad_request_names_what_is_wrong_and_records_nothing(
    api: Client, asked: Asked, body: Any, status: int, code: str, param: str | None
) -> None:
    error = error_of(post(api, body), status)
    assert error["code"] == code and error["type"] == "invalid_request_error"
    if param is not None:
        assert error["param"] == param
    assert error["message"]
    assert asked.calls == [] and not Answer.objects.exists()


def test_the_unknown_model_error_lists_the_models(api: Client, asked: Asked) -> None:
    message = error_of(post(api, {"model": "gpt-4o", "messages": QUESTION}), 404)["message"]
    assert "'gpt-4o'" in message and "ragkg, ragkg-dense" in message


def test_an_oversized_body_gets_413(api: Client, asked: Asked, settings: Settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = {"model": "ragkg", "messages": [{"role": "user", "content": "x" * 2000}]}
    assert error_of(post(api, body), 413)["code"] == "request_too_large"
    assert asked.calls == []


def test_get_on_chat_completions_is_405(api: Client) -> None:
    assert error_of(api.get("/v1/chat/completions"), 405)["code"] == "method_not_allowed"


def test_sampling_parameters_are_accepted_and_ignored(api: Client, asked: Asked) -> None:
    body = {
        "model": "ragkg",
        "messages": QUESTION,
        "temperature": 0.2,
        "top_p": 0.9,
        "max_tokens": 5,
        "stop": ["\n"],
        "seed": 1,
        "user": "someone",
        "n": 1,
        "tool_choice": "none",
        "response_format": {"type": "text"},
        "stream_options": {"include_usage": True},
    }
    assert post(api, body).status_code == 200


# --- model, mode, collections, the question ----------------------------------------------------------


def test_the_model_picks_the_mode_and_the_body_may_override_it(api: Client, kim: User, asked: Asked) -> None:
    post(api, {"model": "ragkg", "messages": QUESTION})
    post(api, {"model": "ragkg-dense", "messages": QUESTION, "collections": ["moss", "secret"]})
    post(api, {"model": "ragkg-dense", "messages": QUESTION, "mode": "graph", "collections": "moss"})
    assert [(c["mode"], c["collections"]) for c in asked.calls] == [
        ("graph", None),
        ("dense", ["moss", "secret"]),
        ("graph", ["moss"]),
    ]
    assert all(c["user"] == kim for c in asked.calls)
    assert asked.calls[0]["question"] == "Who was the first president of the society?"


def test_text_parts_are_joined_and_the_last_user_message_is_the_question(api: Client, asked: Asked) -> None:
    messages = [
        {"role": "system", "content": "You are terse."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Where is the"}, {"type": "text", "text": "Severn Bridge?"}],
        },
        {"role": "assistant", "content": "Near Bristol [1]."},
        {"role": "developer", "content": None},
    ]
    assert post(api, {"model": "ragkg", "messages": messages}).status_code == 200
    assert asked.calls[0]["question"] == "Where is the Severn Bridge?"


@pytest.mark.parametrize(
    ("text", "back"),
    [
        ("When was it founded?", True),
        ("And their first president?", True),
        ("Why?", True),
        ("What year?", True),
        ("Who was the first president of the Bryological Society?", False),
        ("What is the society that publishes the journal called?", False),
    ],
)
def test_a_follow_up_refers_back_when_short_or_by_a_pronoun(text: str, back: bool) -> None:
    assert refers_back(text) is back


def test_a_follow_up_is_asked_after_the_previous_user_question() -> None:
    first = ("user", "Who publishes the Journal of Moss Studies?")
    answer = ("assistant", "The Bryological Society of Wales [1].")
    assert question_condition([first, answer, ("user", "When was it founded?")]) == (
        "Who publishes the Journal of Moss Studies? When was it founded?",
        2,
    )
    standalone = ("user", "Where is the Severn Bridge?")
    assert question_condition([first, answer, standalone]) == ("Where is the Severn Bridge?", 2)
    only = [("system", "Be brief."), ("user", "  When   was it founded? ")]
    assert question_condition(only) == ("When was it founded?", 1)
    long_first = ("user", "x " * 999)
    assert question_condition([long_first, ("user", "And it?")]) == ("And it?", 1)
    with pytest.raises(OpenAIError) as refused:
        question_condition([("assistant", "Hello.")])
    assert refused.value.param == "messages"


def test_the_conditioned_question_is_what_is_asked(api: Client, asked: Asked) -> None:
    messages = [
        {"role": "user", "content": "Who publishes the Journal of Moss Studies?"},
        {"role": "assistant", "content": "The Bryological Society of Wales."},
        {"role": "user", "content": "Who was its first president?"},
    ]
    post(api, {"model": "ragkg", "messages": messages})
    assert asked.calls[0]["question"] == "Who publishes the Journal of Moss Studies? Who was its first president?"


# --- the non-streamed response ---------------------------------------------------------------------


def test_the_completion_carries_the_answer_usage_and_citations(api: Client, asked: Asked) -> None:
    response = post(api, {"model": "ragkg", "messages": QUESTION})
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    body = response.json()
    answer = Answer.objects.get()
    assert body["id"] == f"chatcmpl-{answer.id}" and body["object"] == "chat.completion"
    assert body["model"] == "ragkg" and isinstance(body["created"], int)
    [choice] = body["choices"]
    assert choice["index"] == 0 and choice["finish_reason"] == "stop"
    assert choice["message"] == {"role": "assistant", "content": CITED, "refusal": None}
    assert body["usage"] == {"prompt_tokens": 120, "completion_tokens": 11, "total_tokens": 131}
    citations = body["citations"]
    assert citations["answer_id"] == str(answer.id) and citations["answer"] == CITED
    assert citations["not_found"] is False and citations["tokens"] == TOKENS
    [item] = citations["items"]
    assert (item["number"], item["document"], item["document_id"], item["unit_id"], item["unit_kind"]) == (
        1,
        "society.txt",
        "d" * 32,
        "c" * 32,
        "chunk",
    )
    assert CITED[item["marker_start"] : item["marker_end"]].strip() == "[1]"
    assert item["sentence"] == {"index": 1, "start": 33, "end": 73, "text": "Its first president was Gwendolyn Pryce."}
    [source] = citations["sources"]
    assert source["document"] == "society.txt" and source["text"] == TEXT


def test_not_found_and_nothing_found_are_answers(api: Client, asked: Asked) -> None:
    asked.fields = {
        "state": Answer.NOT_FOUND, "answer": NOT_FOUND, "reason": "weak", "citations": [], "error": "time limit"
    }  # fmt: skip
    body = post(api, {"model": "ragkg", "messages": QUESTION}).json()
    assert body["choices"][0]["message"]["content"] == NOT_FOUND and body["choices"][0]["finish_reason"] == "stop"
    citations = body["citations"]
    assert citations["state"] == "not_found" and citations["not_found"] is True and citations["reason"] == "weak"
    assert citations["note"] == "time limit"

    asked.fields = {"state": Answer.NOT_FOUND, "answer": NOT_FOUND, "reason": services.NOTHING_FOUND, "sources": []}
    body = post(api, {"model": "ragkg", "messages": QUESTION, "collections": ["nobody-reads-this"]}).json()
    assert body["choices"][0]["message"]["content"] == NOT_FOUND
    assert body["citations"]["reason"] == services.NOTHING_FOUND
    assert body["citations"]["items"] == [] and body["citations"]["sources"] == []


def test_a_failed_generation_is_a_503_not_to_be_retried(api: Client, asked: Asked) -> None:
    asked.fields = {"state": Answer.FAILED, "answer": "", "error": "No generation worker picked up the question."}
    error = error_of(post(api, {"model": "ragkg", "messages": QUESTION}), 503)
    response = post(api, {"model": "ragkg", "messages": QUESTION})
    assert error["type"] == "server_error" and error["code"] == "generation_failed"
    assert error["message"] == "No generation worker picked up the question."
    assert response["x-should-retry"] == "false"


def test_busy_is_a_503_with_retry_after_and_records_nothing(api: Client, asked: Asked) -> None:
    asked.refusal = Busy("All 1 generation slots are busy.", retry_after=12, reason="test")
    for stream in (False, True):
        response = post(api, {"model": "ragkg", "messages": QUESTION, "stream": stream})
        error = error_of(response, 503)
        assert error["code"] == "busy" and error["message"] == "All 1 generation slots are busy."
        assert response["Retry-After"] == "12"
    assert not Answer.objects.exists()


def test_answer_errors_keep_their_status(api: Client, asked: Asked) -> None:
    asked.refusal = AnswerError(services.GRAPH_DOWN, stage="graph_expansion")
    error = error_of(post(api, {"model": "ragkg", "messages": QUESTION}), 503)
    assert (error["type"], error["code"], error["message"]) == ("server_error", "graph_expansion", services.GRAPH_DOWN)
    asked.refusal = AnswerError("Please type a question.", stage="analysis", status=400)
    error = error_of(post(api, {"model": "ragkg", "messages": QUESTION}), 400)
    assert error["param"] == "messages"


# --- the streamed response --------------------------------------------------------------------------


def sse(response: Any) -> list[str]:
    """The ``data:`` payloads of a server-sent event stream, checking its framing."""
    assert response["Content-Type"] == "text/event-stream" and response["Cache-Control"] == "no-cache"
    body = b"".join(response.streaming_content).decode()
    assert body.endswith("\n\n")
    events = body[:-2].split("\n\n")
    assert all(e.startswith("data: ") and "\n" not in e for e in events)
    return [e.removeprefix("data: ") for e in events]


def streamed_events(*pieces: str, **final: Any) -> Any:
    def events(answer: Answer) -> Iterator[tuple[str, dict[str, Any]]]:
        yield "started", {}
        for piece in pieces:
            yield "token", {"text": piece}
        Answer.objects.filter(id=answer.id).update(**final)
        yield ("error" if final.get("state") == Answer.FAILED else "done"), {}

    return events


def test_the_stream_gives_role_deltas_then_citations_and_usage(
    api: Client, asked: Asked, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = {"state": Answer.DONE, "answer": CITED, "citations": [CITATION], "generation": {"tokens": 3}}
    monkeypatch.setattr(
        services, "generation_events", streamed_events("Gwendolyn", " Pryce was the first president.", "", **done)
    )
    events = sse(post(api, {"model": "ragkg-dense", "messages": QUESTION, "stream": True}))
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    answer = Answer.objects.get()
    assert {c["id"] for c in chunks} == {f"chatcmpl-{answer.id}"}
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"} and {c["model"] for c in chunks} == {
        "ragkg-dense"
    }
    assert [c["choices"][0]["delta"] for c in chunks] == [
        {"role": "assistant", "content": ""},
        {"content": "Gwendolyn"},
        {"content": " Pryce was the first president."},
        {},
    ]
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None, None, None, "stop"]
    final = chunks[-1]
    assert final["usage"] == {"prompt_tokens": 120, "completion_tokens": 3, "total_tokens": 123}
    citations = final["citations"]
    assert citations["answer"] == CITED and citations["replace"] is True  # markers were put in
    assert [item["document"] for item in citations["items"]] == ["society.txt"]
    assert all("citations" not in c for c in chunks[:-1])
    assert asked.calls[0]["mode"] == "dense"


def test_the_final_chunk_completes_what_was_streamed_when_it_can(
    api: Client, asked: Asked, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = {"state": Answer.DONE, "answer": "Gwendolyn Pryce [1].", "citations": []}
    monkeypatch.setattr(services, "generation_events", streamed_events("Gwendolyn", " Pryce", **done))
    chunks = [json.loads(e) for e in sse(post(api, {"model": "ragkg", "messages": QUESTION, "stream": True}))[:-1]]
    deltas = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert deltas == "Gwendolyn Pryce [1]." and chunks[-1]["citations"]["replace"] is False


def test_an_answer_without_generation_streams_its_text_in_the_final_chunk(
    api: Client, asked: Asked, monkeypatch: pytest.MonkeyPatch
) -> None:
    def nothing(**options: Any) -> Answer:
        asked.calls.append(options)
        return an_answer(
            None, state=Answer.NOT_FOUND, answer=NOT_FOUND, reason=services.NOTHING_FOUND, sources=[], generation={}
        )

    monkeypatch.setattr(asking, "ask_start", nothing)
    chunks = [json.loads(e) for e in sse(post(api, {"model": "ragkg", "messages": QUESTION, "stream": True}))[:-1]]
    assert [c["choices"][0]["delta"] for c in chunks] == [
        {"role": "assistant", "content": ""},
        {"content": NOT_FOUND},
    ]
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop" and chunks[-1]["usage"]["completion_tokens"] == 0


def test_a_failure_mid_stream_is_an_error_event_then_done(
    api: Client, asked: Asked, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed = {"state": Answer.FAILED, "error": "The answer could not be generated (RuntimeError)."}
    monkeypatch.setattr(services, "generation_events", streamed_events("Gwen", **failed))
    events = sse(post(api, {"model": "ragkg", "messages": QUESTION, "stream": True}))
    assert events[-1] == "[DONE]"
    error = json.loads(events[-2])
    assert error == {
        "error": {
            "message": "The answer could not be generated (RuntimeError).",
            "type": "server_error",
            "code": "generation_failed",
            "param": None,
        }
    }
    assert json.loads(events[1])["choices"][0]["delta"] == {"content": "Gwen"}
