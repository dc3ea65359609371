"""Generation's time limit, token accounting and "not found", with stand-in generators (no model, no Redis)."""

from __future__ import annotations

import time
from collections.abc import Generator as Gen
from collections.abc import Sequence
from typing import Any, cast

import pytest
from django.conf import settings
from pytest_django.fixtures import Settings

from apps.answers import generation, streams
from apps.answers.models import Answer
from apps.answers.prompt import NOT_FOUND
from apps.models.interfaces import AnswerEngine, Generator
from apps.models.openai_engine import EngineUnavailable


class WordGenerator:
    """A stand-in generator (no model) whose tokens are words; its own tokenizer."""

    name = "words"
    kind = "in-process"
    where = "in this test"

    @property
    def tokenizer(self) -> WordGenerator:
        return self

    def encode(self, text: str, add_special_tokens: bool = False) -> list[str]:
        return text.split()


class SlowGenerator(WordGenerator):
    """Yields one word per ``delay`` seconds, forever unless closed; records whether it was closed."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.closed = False

    def stream(
        self, prompt: str, *, max_new_tokens: int, system: str | None = None, avoid_first: Sequence[str] = ()
    ) -> Gen[str, None, None]:
        try:
            for number in range(max_new_tokens):
                time.sleep(self.delay)
                yield f" w{number}"
        finally:
            self.closed = True


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, dict[str, Any]]]:
    events: list[tuple[str, str, dict[str, Any]]] = []
    monkeypatch.setattr(
        streams, "event_publish", lambda answer_id, event, **data: events.append((answer_id, event, data))
    )
    monkeypatch.setattr(streams, "stop_requested", lambda answer_id: answer_id in STOPS)
    monkeypatch.setattr(streams, "stop_request", STOPS.add)
    STOPS.clear()
    return events


STOPS: set[str] = set()  # the answers whose asker pressed "Stop" (what Redis holds in the product)


def test_a_generation_past_its_time_limit_stops_and_keeps_its_text(published: list[Any]) -> None:
    model = SlowGenerator(delay=0.05)
    result = generation.stream_answer(
        answer_id="a1",
        generator=cast(Generator, model),
        system="s",
        user="u",
        max_new_tokens=1000,
        timeout=0.3,
    )
    assert result.timed_out and model.closed
    assert 2 <= result.tokens < 20 and result.text.startswith("w0 w1")
    assert [event for _, event, _ in published] == ["token"] * result.tokens
    assert result.first_token_ms is not None and result.first_token_ms >= 40


def test_a_generation_within_its_limit_reports_its_rate(published: list[Any]) -> None:
    result = generation.stream_answer(
        answer_id="a2",
        generator=cast(Generator, SlowGenerator(delay=0.0)),
        system="s",
        user="u",
        max_new_tokens=5,
        timeout=60,
    )
    assert not result.timed_out and result.text == "w0 w1 w2 w3 w4" and result.tokens == 5
    summary = result.as_dict()
    assert summary["tokens"] == 5 and float(str(summary["tokens_per_second"])) > 0 and summary["timed_out"] is False


class FixedGenerator(WordGenerator):
    """Writes ``text`` word by word."""

    def __init__(self, text: str) -> None:
        self.text = text

    def stream(
        self, prompt: str, *, max_new_tokens: int, system: str | None = None, avoid_first: Sequence[str] = ()
    ) -> Gen[str, None, None]:
        yield from (piece + " " for piece in self.text.split(" "))


SOURCES = "Sources:\n\n[1] Kasabian\nKasabian are an English rock band formed in Leicester in 1997."


def generate_with(text: str, question: str) -> Answer:
    assert settings.ANSWER_MIN_ANSWER_SUPPORT == 0.5
    answer = Answer.objects.create(
        question=question, prompt_system="s", prompt_user=f"{SOURCES}\n\nQuestion: {question}", state=Answer.GENERATING
    )
    generation.answer_generate(answer_id=str(answer.id), load_engine=lambda: cast(Generator, FixedGenerator(text)))
    answer.refresh_from_db()
    return answer


@pytest.fixture
def support_checked(settings: Settings) -> None:
    settings.ANSWER_MIN_ANSWER_SUPPORT = 0.5  # the product's setting (the suite's environment turns it off)


@pytest.mark.django_db
@pytest.mark.usefixtures("support_checked")
def test_an_answer_no_source_supports_is_replaced_by_not_found(published: list[Any]) -> None:
    answer = generate_with("106.3 FM\nThe band is played on 106.3 FM.", "Which radio station plays Kasabian?")
    assert answer.state == Answer.NOT_FOUND and answer.not_found and answer.answer == NOT_FOUND
    assert answer.generated.startswith("106.3 FM"), "what the generator wrote is kept for the audit"
    assert answer.citations == [] and "not supported by the sources" in answer.reason and answer.error == ""
    finals = [(event, data) for _, event, data in published if event in (streams.GENERATED, streams.DONE)]
    assert finals == [
        (streams.GENERATED, {"answer": NOT_FOUND, "not_found": True}),
        (
            streams.DONE,
            {"answer": NOT_FOUND, "generation": answer.generation, "note": "", "reason": answer.reason},
        ),
    ]


@pytest.mark.django_db
@pytest.mark.usefixtures("support_checked")
def test_the_generators_own_not_found_and_a_no_to_a_which_question_are_not_answers(published: list[Any]) -> None:
    assert generate_with("Not found in your documents.", "Who founded Kasabian?").not_found
    assert generate_with("No\nKasabian are an English rock band.", "Which radio station plays Kasabian?").not_found
    assert generate_with("", "Who founded Kasabian?").not_found


class StoppingGenerator(SlowGenerator):
    """Presses "Stop" for ``answer_id`` once it has written ``after`` pieces."""

    def __init__(self, answer_id: str, after: int) -> None:
        super().__init__(delay=0.0)
        self.answer_id, self.after = answer_id, after

    def stream(
        self, prompt: str, *, max_new_tokens: int, system: str | None = None, avoid_first: Sequence[str] = ()
    ) -> Gen[str, None, None]:
        for number, piece in enumerate(super().stream(prompt, max_new_tokens=max_new_tokens)):
            if number == self.after:
                STOPS.add(self.answer_id)
            yield piece


def test_stop_ends_the_generation_keeping_what_was_written(published: list[Any]) -> None:
    model = StoppingGenerator("a3", after=3)
    result = generation.stream_answer(
        answer_id="a3", generator=cast(Generator, model), system="s", user="u", max_new_tokens=100, timeout=60
    )
    assert result.stopped and not result.timed_out and model.closed
    assert result.text == "w0 w1 w2" and result.as_dict()["stopped"] is True


@pytest.mark.django_db
def test_stopping_a_queued_answer_fails_it_and_a_written_one_keeps_its_text(published: list[Any]) -> None:
    queued = Answer.objects.create(question="q", state=Answer.RETRIEVED)
    assert generation.answer_stop(str(queued.id)) == "stopped"
    queued.refresh_from_db()
    assert queued.state == Answer.FAILED and queued.error == generation.STOPPED_EARLY
    assert published[-1] == (str(queued.id), streams.ERROR, {"message": generation.STOPPED_EARLY})
    assert not generation.answer_claim(str(queued.id)), "the worker finds nothing left to do"

    writing = Answer.objects.create(question="q", prompt_system="s", prompt_user="u", state=Answer.GENERATING)
    assert generation.answer_stop(str(writing.id)) == "stopping" and str(writing.id) in STOPS
    STOPS.clear()
    model = StoppingGenerator(str(writing.id), after=2)
    generation.answer_generate(answer_id=str(writing.id), load_engine=lambda: cast(Generator, model))
    writing.refresh_from_db()
    assert writing.state == Answer.DONE and writing.generated == "w0 w1"
    assert writing.error.startswith(generation.STOPPED)  # (the stand-in model cannot attribute tokens)
    assert generation.answer_stop(str(writing.id)) == "finished"

    silent = Answer.objects.create(question="q", prompt_system="s", prompt_user="u", state=Answer.GENERATING)
    model = StoppingGenerator(str(silent.id), after=0)
    generation.answer_generate(answer_id=str(silent.id), load_engine=lambda: cast(Generator, model))
    silent.refresh_from_db()
    assert silent.state == Answer.FAILED and silent.error == generation.STOPPED_EARLY


class DeadEngine(WordGenerator):
    """An engine server that cannot be reached."""

    kind = "openai"
    urls = ("http://127.0.0.1:8081/v1",)

    def stream(
        self, prompt: str, *, max_new_tokens: int, system: str | None = None, avoid_first: Sequence[str] = ()
    ) -> Gen[str, None, None]:
        yield from ()
        raise EngineUnavailable("The answer engine at http://127.0.0.1:8081/v1: connection refused is unreachable.")


class ServerEngine(FixedGenerator):
    """An engine server writing ``text``; its answers are read by a local reader."""

    kind = "openai"
    urls = ("http://gpu-host:8000/v1",)


class Reader(WordGenerator):
    """A local reader: counts tokens, and records the prompts it was asked to read."""

    def __init__(self) -> None:
        self.read: list[tuple[str, str | None]] = []

    def prompt_prefill(self, prompt: str, *, system: str | None = None) -> None:
        self.read.append((prompt, system))


@pytest.mark.django_db
def test_an_unreachable_engine_fails_the_answer_with_its_address_and_keeps_the_evidence(published: list[Any]) -> None:
    answer = Answer.objects.create(question="q", prompt_system="s", prompt_user="u", state=Answer.GENERATING)
    generation.answer_generate(answer_id=str(answer.id), load_engine=lambda: cast(AnswerEngine, DeadEngine()))
    answer.refresh_from_db()
    assert answer.state == Answer.FAILED
    assert answer.error.startswith("The answer engine at http://127.0.0.1:8081/v1: connection refused is unreachable.")
    assert "evidence found is shown below" in answer.error
    assert published[-1] == (str(answer.id), streams.ERROR, {"message": answer.error})


@pytest.mark.django_db
@pytest.mark.usefixtures("support_checked")
def test_a_servers_answer_is_read_by_the_local_reader_which_starts_on_the_prompt(
    published: list[Any], settings: Settings
) -> None:
    settings.ANSWER_READER_PREFILL = "auto"
    answer = Answer.objects.create(
        question="Where was Kasabian formed?", prompt_system="s", prompt_user=SOURCES, state=Answer.GENERATING
    )
    reader = Reader()
    generation.answer_generate(
        answer_id=str(answer.id),
        load_engine=lambda: cast(AnswerEngine, ServerEngine("Leicester")),
        load_reader=lambda: cast(Generator, reader),
    )
    answer.refresh_from_db()
    assert answer.generated == "Leicester" and answer.generation["tokens"] == 1
    assert answer.generation["engine"] == {"kind": "openai", "name": "words", "where": "in this test"}
    assert reader.read == [(SOURCES, "s")], "the reader read the prompt while the server wrote"


def test_the_reader_reads_the_prompt_early_only_where_the_engine_runs_on_another_machine(settings: Settings) -> None:
    here, there = cast(AnswerEngine, DeadEngine()), cast(AnswerEngine, ServerEngine(""))
    settings.ANSWER_READER_PREFILL = "auto"
    assert generation.reader_prefill(there) and not generation.reader_prefill(here)
    settings.ANSWER_READER_PREFILL = "on"
    assert generation.reader_prefill(here)
    settings.ANSWER_READER_PREFILL = "off"
    assert not generation.reader_prefill(there)
