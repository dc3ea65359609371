"""Generation's time limit and token accounting, with a stand-in generator (no model, no Redis)."""

from __future__ import annotations

import time
from collections.abc import Generator as Gen
from typing import Any, cast

import pytest

from apps.answers import generation, streams
from apps.models.interfaces import Generator


class SlowGenerator:
    """Yields one word per ``delay`` seconds, forever unless closed; records whether it was closed."""

    name = "slow"

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.closed = False
        self.tokenizer = self

    def encode(self, text: str, add_special_tokens: bool = False) -> list[str]:
        return text.split()

    def stream(self, prompt: str, *, max_new_tokens: int, system: str | None = None) -> Gen[str, None, None]:
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
    return events


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
