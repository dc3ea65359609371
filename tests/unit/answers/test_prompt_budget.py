"""Prompt assembly keeps the prompt within the context budget with the real generator's
tokenizer: sources that do not fit are left out whole, the rest numbered again, the count exact."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

from apps.answers.prompt import SYSTEM, prompt_assemble
from apps.answers.tools import token_counter
from apps.answers.types import Source
from apps.ingest.chunking import split_sentences
from apps.models.registry import generator_tokenizer


def whole(text: str) -> int:
    return len(generator_tokenizer().encode(text, add_special_tokens=False))


def source(number: int, title: str, text: str) -> Source:
    body = f"{title}\n\n{text}"
    return Source(
        number,
        f"c{number}",
        "chunk",
        f"d{number}",
        f"{title}.txt",
        "lab",
        body,
        "",
        1.0,
        (),
        tuple(split_sentences(body)),
    )


def hotpotqa(count: int) -> list[tuple[str, list[Source]]]:
    items = json.loads((Path(settings.DEMO_DATA_DIR) / "multihop/hipporag_hotpotqa_train.json").read_text())
    return [
        (item["question"], [source(n, title, " ".join(text)) for n, (title, text) in enumerate(item["context"], 1)])
        for item in items[:count]
    ]


def test_the_prompt_fits_its_budget_and_its_count_is_exact() -> None:
    count = token_counter(generator_tokenizer())
    for question, sources in hotpotqa(20):  # ten sources each
        full = prompt_assemble(question=question, sources=sources, count_tokens=count)
        assert full.dropped == 0 and full.tokens == whole(full.system) + whole(full.user)
        budget = whole(full.system) + whole(full.user) * 2 // 3
        fitted = prompt_assemble(question=question, sources=sources, count_tokens=count, budget=budget)
        assert fitted.dropped >= 1 and len(fitted.sources) + fitted.dropped == len(sources)
        assert fitted.tokens == whole(fitted.system) + whole(fitted.user) <= budget
        assert [s.number for s in fitted.sources] == list(range(1, len(fitted.sources) + 1))
        assert all(f"[{s.number}] {s.document.removesuffix('.txt')}\n" in fitted.user for s in fitted.sources)


def test_a_budget_too_small_for_any_source_leaves_the_question() -> None:
    count = token_counter(generator_tokenizer())
    question, sources = hotpotqa(1)[0]
    budget = whole(SYSTEM) + 30
    prompt = prompt_assemble(question=question, sources=sources, count_tokens=count, budget=budget)
    assert prompt.sources == () and prompt.dropped == len(sources)
    assert prompt.user.endswith(f"Question: {question}") and "(no sources were found)" in prompt.user
