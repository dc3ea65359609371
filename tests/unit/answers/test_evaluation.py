"""Evaluation metrics and the datasets' supporting passages (../shared/data/multihop)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from apps.answers.evaluation import (
    EvalQuestion,
    all_supporting_at,
    answer_bearing,
    eval_corpus,
    eval_questions,
    exact_match,
    f1_score,
    recall_at,
    supporting_texts,
)


def test_recall_counts_distinct_documents_in_the_first_k() -> None:
    ranked = ["a", "a", "b", "c", "d"]
    assert recall_at(ranked, frozenset({"a", "c"}), 2) == 0.5
    assert recall_at(ranked, frozenset({"a", "c"}), 3) == 1.0
    assert recall_at([], frozenset({"a"}), 5) == 0.0


def test_all_supporting_needs_every_supporting_passage_in_the_first_k() -> None:
    ranked = ["a", "a", "b", "c", "d"]
    assert not all_supporting_at(ranked, frozenset({"a", "c"}), 2)
    assert all_supporting_at(ranked, frozenset({"a", "c"}), 3)
    assert not all_supporting_at(ranked, frozenset(), 5)


def test_an_answer_is_borne_by_whole_words_and_never_by_yes_or_no() -> None:
    assert answer_bearing("The Tamsin reaches the sea at the port of Vell.", ["Vell"])
    assert not answer_bearing("Vellum was made there.", ["Vell"])
    assert not answer_bearing("No, it is not.", ["no"])
    question = EvalQuestion("q", "Where?", ("Vell",), frozenset({"a"}), (("A", "at Vell"), ("B", "distractor")))
    assert supporting_texts(question) == ["at Vell"]


def test_exact_match_and_f1_normalise_like_squad() -> None:
    assert exact_match("The Eiffel Tower.", ["eiffel tower"]) == 1.0
    assert exact_match("Paris, France", ["Paris"]) == 0.0
    assert f1_score("Paris, France", ["Paris"]) == pytest.approx(2 / 3)
    assert f1_score("London", ["Paris", "london"]) == 1.0


@pytest.mark.parametrize("dataset", ["hotpotqa", "musique"])
def test_every_question_has_supporting_passages_in_the_corpus(dataset: str) -> None:
    data_dir = Path(settings.DEMO_DATA_DIR)
    questions = eval_questions(dataset, data_dir)
    names = {name for name, _ in eval_corpus(dataset, data_dir)}
    assert len(questions) >= 95
    assert all(q.supporting <= names for q in questions)
    assert sum(len(q.supporting) for q in questions) / len(questions) >= 2.0
