"""The learned ranker's features and how its scores reorder the pool (apps/answers/ranker.py)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest

from apps.answers.ranker import (
    FEATURES,
    MODEL_PATH,
    LearnedRanker,
    candidate_features,
    from_question_entity,
    learned_ranker,
    ranker_apply,
    title_of,
)
from apps.answers.types import Candidate, GraphPath

QUESTION = "Who directed the film in which Tamsin Vell starred?"


def _unit(node_id: str, document: str, text: str, *, cosine: float, score: float, **fields: object) -> Candidate:
    vector = np.zeros(4, dtype=np.float32)
    vector[hash(node_id) % 4] = 1.0
    return Candidate(
        node_id,
        "Chunk",
        rerank_score=cosine,
        score=score,
        document=document,
        text=text,
        vector=vector,
        **fields,  # type: ignore[arg-type]
    )


def pool() -> list[Candidate]:
    first = _unit(
        "a",
        "Tamsin Vell",
        "Tamsin Vell starred in Harbour Lights, a film of 1998.",
        cosine=0.7,
        score=0.9,
        seed_score=0.7,
        lexical_score=8.0,
        paths=[GraphPath(("a",), (), 0.7)],
    )
    bridge = _unit(
        "b",
        "Harbour Lights (film)",
        "Harbour Lights is a 1998 drama directed by Oren Marsh.",
        cosine=0.3,
        score=0.35,
        support_score=0.2,
        paths=[GraphPath(("a", "e1", "b"), ("MENTIONS", "MENTIONS"), 0.2)],
    )
    other = _unit(
        "c",
        "Tamsin Vell (2)",
        "Vell grew up in Leeds.",
        cosine=0.5,
        score=0.5,
        seed_score=0.5,
        lexical_score=4.0,
        paths=[GraphPath(("c",), (), 0.5), GraphPath(("e2", "c"), ("MENTIONS",), 0.4)],
    )
    return [first, bridge, other]


def column(features: npt.NDArray[np.float32], name: str) -> list[float]:
    return [round(float(value), 4) for value in features[:, FEATURES.index(name)]]


def test_titles_are_names_without_folders_extensions_or_parentheticals() -> None:
    assert title_of("hotpotqa/Harbour Lights (film).txt") == "Harbour Lights"
    assert title_of("Charmed (season 2) (2)") == "Charmed"
    assert title_of("report.v2.pdf") == "report.v2"
    assert title_of("Tamsin Vell") == "Tamsin Vell"


def test_a_path_from_a_question_entity_is_told_from_one_from_a_seed() -> None:
    assert from_question_entity(GraphPath(("e", "u"), ("MENTIONS",), 0.3))
    assert from_question_entity(GraphPath(("e", "r", "u"), ("RELATED", "MENTIONS"), 0.3))
    assert not from_question_entity(GraphPath(("s", "e", "u"), ("MENTIONS", "MENTIONS"), 0.3))
    assert not from_question_entity(GraphPath(("s", "u"), ("NEXT",), 0.3))
    assert not from_question_entity(GraphPath(("s",), (), 0.3))


def test_features_describe_relevance_graph_and_the_bridge() -> None:
    features = candidate_features(QUESTION, pool())
    assert features.shape == (3, len(FEATURES))
    assert features.dtype == np.float32
    assert column(features, "cosine_gap") == [0.0, -0.4, -0.2]
    assert column(features, "rank") == [0.0, round(float(np.log1p(2)), 4), round(float(np.log1p(1)), 4)]
    assert column(features, "lexical") == [1.0, 0.0, 0.5]
    assert column(features, "seed") == [1.0, 0.0, 1.0]
    assert column(features, "from_question_entity") == [0.0, 0.0, 1.0]
    # The bridge: reached from the best passage, which names its title ("Harbour Lights"), and the one
    # passage the best chooses as its bridge; the look-alike's title is named there too.
    assert column(features, "bridge_path") == [0.0, 0.2, 0.0]
    assert column(features, "chosen_bridge") == [0.0, 1.0, 0.0]
    assert column(features, "named_by_partner") == [0.0, 0.7, 0.7]
    # With the first passage it covers "directed" too: the pair gains what the first lacks.
    pair_gain = column(features, "pair_gain")
    assert pair_gain[1] > 0.0 and pair_gain[1] >= pair_gain[2]
    assert column(features, "title_in_question")[0] == 1.0


def test_a_title_that_is_no_name_gives_no_title_features() -> None:
    """A file name of common words ("lanterns.txt") is no page another passage names, nor a name the
    question asks about: only titles that are names count (``title_name``)."""
    pool = [
        _unit("f", "Blue Lantern Harbour (film).txt", "The picture was shot in 1987.", cosine=0.77, score=0.9),
        _unit("l", "lanterns.txt", "A blue lantern signals a harbour.", cosine=0.66, score=0.8),
        _unit("h", "harbours.txt", "Harbours were lit by lanterns.", cosine=0.4, score=0.4),
    ]
    features = candidate_features("In which year was Blue Lantern Harbour shot?", pool)
    assert column(features, "title_in_question") == [1.0, 0.0, 0.0]
    assert column(features, "named_by_partner") == [0.0, 0.0, 0.0]


def test_no_candidates_no_rows() -> None:
    assert candidate_features(QUESTION, []).shape == (0, len(FEATURES))


class _ByColumn:
    def __init__(self, name: str) -> None:
        self.index = FEATURES.index(name)

    def scores(self, features: npt.NDArray[np.float32]) -> list[float]:
        return [float(value) for value in features[:, self.index]]


def test_the_ranker_s_scores_order_the_pool_and_the_features_stay() -> None:
    ranked = ranker_apply(QUESTION, pool(), _ByColumn("bridge_path"))
    assert ranked[0].node_id == "b"
    assert ranked[0].score == pytest.approx(1 / (1 + math.exp(-0.2)))  # the logistic of its learned score
    assert [c.score for c in ranked] == sorted((c.score for c in ranked), reverse=True)
    assert all(c.features is not None and c.features.shape == (len(FEATURES),) for c in ranked)


def test_the_shipped_model_scores_a_pool_with_the_bridge_high() -> None:
    ranker = LearnedRanker(MODEL_PATH)
    features = candidate_features(QUESTION, pool())
    scores = ranker.scores(features)
    assert len(scores) == 3 and all(np.isfinite(scores))
    assert ranker.scores(features[:0]) == []
    # The supporting pair (the page naming the film, the film's page) outranks the look-alike.
    assert scores[1] > scores[2]


def test_a_model_trained_on_other_features_is_not_used(tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    model = tmp_path / "reranker.onnx"
    model.write_bytes(MODEL_PATH.read_bytes())
    (tmp_path / "reranker.json").write_text('{"features": ["cosine"]}')
    assert learned_ranker(str(model)) is None
    assert "other features" in caplog.text
    assert learned_ranker(str(tmp_path / "missing.onnx")) is None
    assert isinstance(learned_ranker(), LearnedRanker)
