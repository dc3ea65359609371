"""Training the learned ranker: the metrics, the folds, a fit that finds the signal, and the export the
pipeline loads (benchmarks/train_reranker.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from apps.answers.ranker import LearnedRanker
from benchmarks.train_reranker import (
    FOLDS,
    Pool,
    Variant,
    cross_validate,
    export,
    fit,
    folds_of,
    hand_weighted,
    pool_metrics,
    pools_load,
    pools_save,
    predict,
)

WIDTH = 4


def synthetic(count: int, seed: int = 0) -> list[Pool]:
    """Pools of 12 candidates, two supporting, listed last; only column 2 tells them apart."""
    rng = np.random.default_rng(seed)
    pools = []
    for number in range(count):
        labels = np.zeros(12, dtype=np.float32)
        labels[-2:] = 1.0
        features = rng.normal(size=(12, WIDTH)).astype(np.float32)
        features[:, 2] = labels * 2.0 + rng.normal(scale=0.3, size=12)
        documents = [f"q{number}/d{i}" for i in range(12)]
        pools.append(Pool("synthetic", f"question {number}", features, labels, documents, documents[-2:]))
    return pools


def test_metrics_count_distinct_passages_in_the_order_given() -> None:
    (pool,) = synthetic(1)
    best_first = pool_metrics([pool], [pool.labels.copy()])
    assert best_first == {"R@2": 1.0, "R@5": 1.0, "R@10": 1.0, "all@5": 1.0}
    as_listed = hand_weighted([pool])["synthetic"]  # the two supporting passages are listed last
    assert as_listed["R@5"] == 0.0 and as_listed["R@10"] == 0.0 and as_listed["all@5"] == 0.0
    pool.documents[1] = pool.documents[0]  # two chunks of one passage: the eleventh candidate is the tenth passage
    assert hand_weighted([pool])["synthetic"]["R@10"] == 0.5


def test_each_question_is_held_out_in_exactly_one_fold() -> None:
    fold = folds_of(synthetic(23))
    assert sorted(set(fold)) == list(range(FOLDS))
    assert folds_of(synthetic(23)) == fold  # the same seed, the same folds


def test_a_fit_finds_the_column_that_tells_and_the_export_scores_alike(tmp_path: Path) -> None:
    pools = synthetic(40)
    assert cross_validate(pools, Variant(epochs=60))["synthetic"]["all@5"] >= 0.9
    model = fit(pools, Variant(epochs=60))
    assert pool_metrics(pools, predict(model, pools))["R@2"] >= 0.9
    path = tmp_path / "reranker.onnx"
    export(model, path, WIDTH)
    exported = LearnedRanker(path).scores(pools[0].features)
    np.testing.assert_allclose(exported, predict(model, pools[:1])[0], rtol=1e-4, atol=1e-5)


def test_collected_pools_survive_the_cache(tmp_path: Path) -> None:
    pools = synthetic(3)
    pools_save(pools, tmp_path / "pools.npz")
    loaded = pools_load(tmp_path / "pools.npz")
    assert [p.question for p in loaded] == [p.question for p in pools]
    np.testing.assert_array_equal(loaded[2].features, pools[2].features)
    assert loaded[1].supporting == pools[1].supporting and loaded[1].dataset == "synthetic"
