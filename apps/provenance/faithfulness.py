"""Faithfulness checks of token attribution on HotpotQA's paragraphs (../shared/data/multihop).

Copy cases: a question's context paragraphs are the sources, and the answer is one supporting
sentence copied word for word; every answer token's right unit is that sentence. Supporting
facts: the generator answers the question from the paragraphs, and the sentences attribution
ranks first are compared with the dataset's ``supporting_facts``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from transformers import PreTrainedTokenizerBase

from apps.answers.prompt import WHOLE, prompt_assemble
from apps.answers.types import Source
from apps.provenance.layout import Layout, layout_build
from apps.provenance.types import Attribution
from apps.provenance.units import source_units

HOTPOTQA = "multihop/hipporag_hotpotqa_train.json"


@dataclass(frozen=True)
class Case:
    question: str
    sources: list[dict[str, Any]]  # as an Answer stores them
    system: str
    user: str
    answer: str  # empty: to be generated
    target: tuple[int, int] | None  # (source position, sentence index) the answer is copied from
    supporting: frozenset[tuple[int, int]]


def _source(number: int, title: str, sentences: Sequence[str]) -> Source:
    text = "".join(sentences)
    spans, position = [], 0
    for sentence in sentences:
        lead = len(sentence) - len(sentence.lstrip())
        spans.append((position + lead, position + len(sentence.rstrip())))
        position += len(sentence)
    return Source(number, f"hotpotqa:{title}", "chunk", "", title, "", text, "", 1.0, (), tuple(spans))


def hotpotqa_items(data_dir: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((data_dir / HOTPOTQA).read_text())
    return items


def _case(item: dict[str, Any], paragraphs: int, count_tokens: Callable[[str], int]) -> Case:
    facts = {(title, index) for title, index in item["supporting_facts"]}
    titles = [title for title, _ in item["context"]]
    keep = [i for i, title in enumerate(titles) if any(title == t for t, _ in facts)]
    keep += [i for i in range(len(titles)) if i not in keep][: max(0, paragraphs - len(keep))]
    keep.sort()
    sources = [_source(n, titles[i], item["context"][i][1]) for n, i in enumerate(keep, start=1)]
    # every sentence is shown: the benchmark asks which of them an answer stands on
    prompt = prompt_assemble(question=item["question"], sources=sources, count_tokens=count_tokens, params=WHOLE)
    supporting = frozenset(
        (position, index)
        for position, i in enumerate(keep)
        for index in range(len(item["context"][i][1]))
        if (titles[i], index) in facts
    )
    shown = [s.as_dict() for s in prompt.sources]
    return Case(item["question"], shown, prompt.system, prompt.user, "", None, supporting)


def copy_cases(
    items: Sequence[dict[str, Any]], *, paragraphs: int, count_tokens: Callable[[str], int], min_words: int = 6
) -> list[Case]:
    """One case per supporting sentence of at least ``min_words`` words: the answer is that sentence."""
    cases = []
    for item in items:
        base = _case(item, paragraphs, count_tokens)
        for position, index in sorted(base.supporting):
            start, end = base.sources[position]["sentences"][index]
            sentence = base.sources[position]["text"][start:end]
            if len(sentence.split()) >= min_words:
                cases.append(
                    Case(
                        base.question,
                        base.sources,
                        base.system,
                        base.user,
                        sentence,
                        (position, index),
                        base.supporting,
                    )
                )
    return cases


def question_cases(
    items: Sequence[dict[str, Any]], *, paragraphs: int, count_tokens: Callable[[str], int]
) -> list[Case]:
    return [_case(item, paragraphs, count_tokens) for item in items]


def case_layout(case: Case, tokenizer: PreTrainedTokenizerBase, answer: str | None = None) -> Layout:
    """The prompt layout of a case, with its copied answer or the ``answer`` given (a generated one)."""
    return layout_build(
        tokenizer=tokenizer,
        system=case.system,
        user=case.user,
        answer=case.answer if answer is None else answer,
        sources=case.sources,
        units=source_units(case.sources),
    )


def copy_accuracy(attribution: Attribution, target: tuple[int, int]) -> float:
    """Share of answer tokens whose best unit is the target sentence."""
    units = attribution.units
    right = [i for i, unit in enumerate(units) if (unit.source, unit.index) == target]
    if not attribution.tokens or not right:
        return 0.0
    best = attribution.scores.argmax(axis=1)
    attributed = attribution.scores.sum(axis=1) > 0
    return float(np.mean((best == right[0]) & attributed))


def top_sentences(attribution: Attribution, k: int) -> list[tuple[int, int]]:
    """The ``k`` units with the most attribution over the whole answer."""
    totals = attribution.scores.sum(axis=0)
    order = np.argsort(-totals, kind="stable")[:k]
    return [(attribution.units[i].source, attribution.units[i].index) for i in order if totals[i] > 0]


def proxy_agreement(own: Attribution, proxy: Attribution) -> dict[str, float]:
    """How often a reader's attribution of an answer (``proxy``: another model, its own tokens) names the
    same best unit as the writer's own, token by token of the writer: the reader's scores of the tokens
    overlapping each writer token's characters are summed. Both must cover the same units."""
    if [(u.source, u.index) for u in own.units] != [(u.source, u.index) for u in proxy.units]:
        raise ValueError("the two attributions cover different units")
    agree: list[bool] = []
    for row, token in enumerate(own.tokens):
        if own.scores[row].sum() <= 0:
            continue
        overlapping = [i for i, other in enumerate(proxy.tokens) if other.start < token.end and token.start < other.end]
        scores = proxy.scores[overlapping].sum(axis=0) if overlapping else np.zeros(len(proxy.units))
        if scores.sum() <= 0:
            continue
        agree.append(int(scores.argmax()) == int(own.scores[row].argmax()))
    return {"tokens": len(agree), "top1_agreement": float(np.mean(agree)) if agree else 0.0}
