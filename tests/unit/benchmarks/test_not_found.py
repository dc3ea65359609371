"""bench-not-found's fits: the thresholds chosen from the signals, with the bound on wrong refusals held per corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apps.answers.support import Evidence, Thresholds
from benchmarks import not_found
from benchmarks.not_found import docs_half, fit, fit_combined, refused, refused_by


def spread(similarity: float, coverage: float, n: int) -> list[Evidence]:
    return [Evidence(similarity + 0.001 * i, coverage) for i in range(n)]


ANSWERABLE = spread(0.6, 0.55, 40)  # multi-hop questions: half their words in other passages
WORDED_OTHERWISE = spread(0.40, 1.0, 10)  # a manual's answerable questions: lower similarity, every word found
UNANSWERABLE = spread(0.45, 0.6, 30) + spread(0.1, 0.0, 10)  # near misses, and off-topic ones


def test_either_rule_refuses_what_it_can_within_the_bound_of_each_corpus() -> None:
    similarity, coverage = fit([ANSWERABLE, WORDED_OTHERWISE], UNANSWERABLE, max_wrong=0.05)
    assert refused(ANSWERABLE, similarity, coverage) <= 0.05 and refused(WORDED_OTHERWISE, similarity, coverage) <= 0.05
    assert refused(UNANSWERABLE, similarity, coverage) == 0.25  # only the off-topic ten


def test_the_combined_rule_separates_what_either_rule_cannot() -> None:
    combined = fit_combined([ANSWERABLE, WORDED_OTHERWISE], UNANSWERABLE, max_wrong=0.05)
    assert refused_by(ANSWERABLE, combined) == 0.0 and refused_by(WORDED_OTHERWISE, combined) <= 0.05
    assert refused_by(UNANSWERABLE, combined) == 1.0
    assert combined.coverage_weight > 0 and combined.min_coverage == 0.0
    pooled = fit_combined([ANSWERABLE + WORDED_OTHERWISE[:1]], UNANSWERABLE, max_wrong=0.05)
    assert isinstance(pooled, Thresholds)


def test_the_manuals_questions_are_split_by_their_number() -> None:
    assert docs_half({"id": "a01"}) == "tuning" and docs_half({"id": "u60"}) == "validation"


def test_unrelated_wikipedia_questions_leave_out_any_the_corpus_could_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    qas = [("Who won?", "Denver Broncos"), ("Where?", "Levi's Stadium"), ("When?", "1066"), ("Which river?", "Seine")]
    squad = {
        "data": [
            {"paragraphs": [{"qas": [{"question": q, "answers": [{"text": a}]} for q, a in qas[i : i + 2]]}]}
            for i in (0, 2)
        ]
    }
    (tmp_path / "multilingual/xquad").mkdir(parents=True)
    (tmp_path / "multilingual/xquad/xquad.en.json").write_text(json.dumps(squad))
    corpus = [("a.txt", b"The Normans reached the SEINE valley."), ("b.txt", b"Denver broncos history.")]
    monkeypatch.setattr(not_found, "eval_corpus", lambda dataset, data_dir: corpus)
    assert not_found.unrelated_wikipedia("hotpotqa", tmp_path, 10) == ["Where?", "When?"]
    assert not_found.unrelated_wikipedia("hotpotqa", tmp_path, 1) == ["Where?"]
