"""The OpenAI-compatible answer engine's rules on a fake transport (httpx's MockTransport): the request it
sends, stop texts, retries before the first token only, the circuit, the re-ask that avoids a first word,
cancellation. tests/integration/test_engine_server.py runs it against a real llama.cpp server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from apps.models.openai_engine import (
    SERVER_STOPS,
    EngineBroken,
    EngineSettings,
    EngineUnavailable,
    OpenAIEngine,
    base_url,
    first_word,
    repeat_cut,
)


def sse(*pieces: str) -> bytes:
    """A streamed chat completion writing ``pieces``, as the servers send it."""
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    chunks += [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in pieces]
    lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Server:
    """Fake servers by host: each answers with the next reply of its list (bytes: a stream; an int: that
    status; an exception: raised), and records the requests it got."""

    def __init__(self, replies: dict[str, list[Any]]) -> None:
        self.replies = replies
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": [{"id": f"qwen2.5-coder-0.5b@{host}"}]})
        self.requests.append((host, json.loads(request.content)))
        reply = self.replies[host].pop(0)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, int):
            return httpx.Response(reply, text="busy")
        return httpx.Response(200, content=reply, headers={"content-type": "text/event-stream"})


def engine(server: Server, hosts: tuple[str, ...] = ("a",), clock: Clock | None = None, **options: Any) -> OpenAIEngine:
    config = EngineSettings(urls=tuple(f"http://{host}:8081" for host in hosts), **options)
    return OpenAIEngine(
        config,
        transport=httpx.MockTransport(server),
        clock=clock or Clock(),
        token_ids=lambda words: frozenset({7, 8}),
    )


def written(stream: Iterator[str]) -> str:
    return "".join(stream)


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("apps.models.openai_engine.time.sleep", lambda seconds: None)


def test_the_request_is_the_in_process_generators_prompt_decoded_greedily() -> None:
    server = Server({"a": [sse("Gwen", "dolyn Pryce", "\n\n", "Question: more")]})
    text = written(engine(server).stream("Sources: ...\n\nQuestion: Who?", max_new_tokens=40, system="Answer."))
    assert text == "Gwendolyn Pryce", "the stop text and what follows it are never shown"
    _, body = server.requests[0]
    assert body["messages"] == [
        {"role": "system", "content": "Answer."},
        {"role": "user", "content": "Sources: ...\n\nQuestion: Who?"},
    ]
    assert body["temperature"] == 0 and body["max_tokens"] == 40 and body["stream"] is True
    assert body["stop"] == list(SERVER_STOPS) and len(body["stop"]) <= 4
    assert body["model"] == "qwen2.5-coder-0.5b@a", "the first model the server lists"


def test_a_server_that_cannot_be_reached_is_skipped_for_the_next_one() -> None:
    server = Server({"a": [httpx.ConnectError("refused")], "b": [sse("Vell")]})
    found = engine(server, hosts=("a", "b"))
    assert written(found.stream("q", max_new_tokens=8)) == "Vell"
    assert [host for host, _ in server.requests] == ["a", "b"]
    assert found.circuits()["http://a:8081/v1"]["failures"] == 1
    assert found.circuits()["http://b:8081/v1"]["failures"] == 0


def test_busy_answers_are_retried_but_a_refusal_is_not() -> None:
    server = Server({"a": [503, 503, sse("Vell")]})
    assert written(engine(server, retries=2).stream("q", max_new_tokens=8)) == "Vell"
    refused = Server({"a": [401]})
    with pytest.raises(EngineUnavailable, match="HTTP 401"):
        written(engine(refused, retries=2).stream("q", max_new_tokens=8))
    assert len(refused.requests) == 1


def test_a_server_failing_after_the_first_token_is_not_asked_again() -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        class Stream(httpx.SyncByteStream):
            def __iter__(self) -> Iterator[bytes]:
                yield sse("Gwen")[: -len(b"data: [DONE]\n\n")]
                raise httpx.RemoteProtocolError("peer closed connection")

        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": [{"id": "m"}]})
        calls.append(request)
        return httpx.Response(200, stream=Stream())

    calls: list[httpx.Request] = []
    broken_engine = OpenAIEngine(EngineSettings(urls=("http://a:1",), retries=3), transport=httpx.MockTransport(broken))
    pieces: list[str] = []
    with pytest.raises(EngineBroken, match="stopped while writing this answer"):
        for piece in broken_engine.stream("q", max_new_tokens=8):
            pieces.append(piece)
    assert pieces == ["Gwen"] and len(calls) == 1


def test_the_circuit_opens_after_failures_in_a_row_and_lets_one_try_through_later() -> None:
    clock = Clock()
    refused = [httpx.ConnectError("refused")] * 4
    server = Server({"a": [*refused, sse("back")]})
    found = engine(server, clock=clock, retries=0, circuit_failures=2, circuit_seconds=30)
    for _ in range(2):
        with pytest.raises(EngineUnavailable):
            written(found.stream("q", max_new_tokens=8))
    with pytest.raises(
        EngineUnavailable,
        match=r"The answer engine at http://a:8081/v1: connection refused "
        r"\(next try in 30 s\) is unreachable",
    ):
        written(found.stream("q", max_new_tokens=8))
    assert len(server.requests) == 2, "an open circuit sends nothing"
    clock.now += 31
    server.replies["a"] = [sse("back")]
    assert written(found.stream("q", max_new_tokens=8)) == "back"
    assert found.circuits()["http://a:8081/v1"] == {"failures": 0, "open": False, "retry_in_s": 0.0, "last_error": ""}


def test_an_answer_beginning_with_an_avoided_word_is_asked_again_without_it() -> None:
    server = Server({"a": [sse("Yes", "\n", "The band formed in 1997."), sse("Leicester", "\n")]})
    text = written(engine(server).stream("q", max_new_tokens=8, avoid_first=("Yes", "No")))
    assert text == "Leicester\n"
    assert "logit_bias" not in server.requests[0][1]
    assert server.requests[1][1]["logit_bias"] == {"7": -100, "8": -100}


def test_a_repetition_is_cut_where_it_starts_again() -> None:
    server = Server({"a": [sse("Vell\nThe Tamsin reaches the sea at Vell. ", "The Tamsin reaches the sea at Vell.")]})
    assert written(engine(server).stream("q", max_new_tokens=60)) == "Vell\nThe Tamsin reaches the sea at Vell. "
    assert repeat_cut("Vell\nVell is the port.") is None, "the supporting line may repeat the short answer"
    assert first_word("Yes") is None and first_word("Yes\n") == "Yes" and first_word("  No, it") == "No"


def test_closing_the_stream_closes_the_connection() -> None:
    closed: list[bool] = []

    class Endless(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            while True:
                yield b'data: {"choices": [{"delta": {"content": " w"}}]}\n\n'

        def close(self) -> None:
            closed.append(True)

    def endless(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": [{"id": "m"}]})
        return httpx.Response(200, stream=Endless())

    stream = OpenAIEngine(EngineSettings(urls=("http://a:1",)), transport=httpx.MockTransport(endless)).stream(
        "q", max_new_tokens=1000
    )
    assert [next(stream) for _ in range(3)] == [" w"] * 3
    stream.close()
    assert closed == [True]


def test_base_urls_end_with_the_api_version() -> None:
    assert base_url("http://h:8000") == "http://h:8000/v1"
    assert base_url("http://h:8000/v1/") == "http://h:8000/v1"
    assert base_url("https://api.example.com/openai/v1") == "https://api.example.com/openai/v1"


def test_an_avoided_first_word_is_kept_when_the_servers_tokens_are_unknown() -> None:
    server = Server({"a": [sse("Yes", "\n")]})
    config = EngineSettings(urls=("http://a:8081",))
    unknown = OpenAIEngine(config, transport=httpx.MockTransport(server), token_ids=lambda words: frozenset())
    assert written(unknown.stream("q", max_new_tokens=8, avoid_first=("Yes", "No"))) == "Yes\n"
    assert len(server.requests) == 1
