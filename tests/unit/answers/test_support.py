""" "Not found in your documents": the retrieval's similarity and word coverage, and the short answer's support."""

from __future__ import annotations

import functools
from dataclasses import replace

from apps.answers.prompt import prompt_assemble
from apps.answers.support import (
    CJK,
    FROM_CJK,
    SAID,
    SAME,
    TO_CJK,
    UNSUPPORTED_WORDS,
    EvidenceParams,
    Thresholds,
    answer_refusal,
    answer_support,
    evidence_measure,
    evidence_sufficient,
    prompt_sources_text,
    word_coverage,
)
from apps.answers.types import Source
from apps.ingest.chunking import split_sentences

TEXT = (
    "Moss Society\n\nThe Moss Society is a learned society founded in 1903. It meets in York every spring. "
    "Its first president was Gwendolyn Pryce."
)
WHERE_ZH = "苔藓学会在哪里开会？"  # noqa: RUF001
PARAMS = EvidenceParams(min_similarity=0.3, min_coverage=0.5, min_answer_support=0.5)


def chunk(text: str = TEXT, rerank: float = 0.6) -> Source:
    source = Source(1, "c1", "chunk", "d1", "moss/society.txt", "lab", text, "", 1.0, (), tuple(split_sentences(text)))
    return replace(source, rerank_score=rerank)


def test_a_question_about_the_sources_topic_is_covered() -> None:
    evidence = evidence_measure("Who was the first president of the Moss Society?", [chunk()])
    assert evidence.coverage == 1.0 and evidence.similarity == 0.6
    assert evidence_sufficient(evidence, PARAMS)


def test_a_question_about_something_the_sources_never_name_is_not() -> None:
    evidence = evidence_measure("Which radio station broadcasts Kasabian concerts in Leicester?", [chunk()])
    assert evidence.coverage == 0.0
    assert not evidence_sufficient(evidence, PARAMS)
    assert not evidence_sufficient(evidence_measure("Who founded the Moss Society?", [chunk(rerank=0.1)]), PARAMS)


def test_the_combined_rule_lets_full_coverage_make_up_for_a_lower_similarity() -> None:
    combined = EvidenceParams(
        min_similarity=0.35, min_coverage=0.0, min_answer_support=0.5, min_evidence=0.9, coverage_weight=0.75
    )
    worded_otherwise = evidence_measure("Who was the first president of the Moss Society?", [chunk(rerank=0.4)])
    assert worded_otherwise.coverage == 1.0 and evidence_sufficient(worded_otherwise, combined)  # 0.4 + 0.75
    assert not evidence_sufficient(worded_otherwise, replace(combined, min_similarity=0.45))  # the floor holds
    half = evidence_measure("Who was the first president of the Kasabian fan club?", [chunk(rerank=0.4)])
    assert 0.0 < half.coverage < 0.67 and not evidence_sufficient(half, combined)  # 0.4 + 0.75 * coverage < 0.9
    assert evidence_sufficient(half, replace(combined, coverage_weight=2.0))
    # a reading with thresholds of its own is held to those alone
    chinese = evidence_measure(WHERE_ZH, [chunk(rerank=0.3)])
    assert evidence_sufficient(chinese, replace(combined, readings={FROM_CJK: Thresholds(0.25, 0.0)}))


def test_each_reading_is_held_to_its_own_thresholds() -> None:
    readings = {CJK: Thresholds(0.2, 0.4), TO_CJK: Thresholds(0.5, 0.0), FROM_CJK: Thresholds(0.6, 0.0)}
    params = replace(PARAMS, readings=readings)
    chinese = "苔藓学会\n\n苔藓学会是一个成立于1903年的学术团体。它每年春天在约克开会。"
    zh = evidence_measure(WHERE_ZH, [chunk(chinese, rerank=0.25)])
    assert zh.reading == CJK and zh.coverage > 0.4
    assert evidence_sufficient(zh, params) and not evidence_sufficient(zh, PARAMS)  # 0.25: above 0.2, below 0.3
    across = evidence_measure("Where does the Moss Society meet?", [chunk(chinese, rerank=0.45)])
    assert (across.reading, across.coverage) == (TO_CJK, 1.0)
    assert not evidence_sufficient(across, params) and evidence_sufficient(across, PARAMS)
    back = evidence_measure(WHERE_ZH, [chunk(rerank=0.55)])
    assert (back.reading, back.coverage) == (FROM_CJK, 1.0)
    assert not evidence_sufficient(back, params) and evidence_sufficient(back, PARAMS)
    english = evidence_measure("Who founded the Moss Society?", [chunk(rerank=0.35)])
    assert english.reading == SAME and evidence_sufficient(english, params)  # the general thresholds


def test_longer_words_weigh_more_and_stems_match_inflections() -> None:
    assert word_coverage(["publishes"], "It published a journal.") == 1.0
    assert word_coverage(["kasabian", "band"], "the band") == 4 / 12


def test_no_sources_give_no_similarity_and_no_coverage() -> None:
    evidence = evidence_measure("Who founded the Moss Society?", [])
    assert evidence.similarity == 0.0 and evidence.coverage == 0.0


def test_the_short_answer_must_come_from_what_the_prompt_showed() -> None:
    prompt = prompt_assemble(question="Who was the first president?", sources=[chunk()], count_tokens=len)
    shown = prompt_sources_text(prompt.user)
    assert "Question:" not in shown and "Gwendolyn Pryce" in shown
    question = "Who was the first president?"
    assert answer_support("Gwendolyn Pryce", shown, question) == 1.0
    assert answer_support("106.3 FM", shown, question) == 0.0
    assert answer_support("the first president", shown, question) == 1.0  # the question's words: nothing to check
    # no source spells out a yes or a no, but it answers only a yes/no question
    assert answer_support("Yes", shown, "Was the society founded in 1903?") == 1.0
    assert answer_support("No", shown, question) == 0.0


def test_an_answer_is_refused_when_empty_said_not_found_or_unsupported() -> None:
    shown = prompt_sources_text(
        prompt_assemble(question="Who was the first president?", sources=[chunk()], count_tokens=len).user
    )
    refusal = functools.partial(answer_refusal, shown=shown, question="Who was the first president?", min_support=0.5)
    assert refusal("Gwendolyn Pryce\nIts first president was Gwendolyn Pryce.") == ""
    assert refusal("Not found in your documents.") == SAID
    assert refusal("") == SAID
    assert refusal("Ada Brook\nAda Brook was its first president.") == UNSUPPORTED_WORDS
