from __future__ import annotations

import numpy as np
import pytest

from apps.models.interfaces import Reranker, TextEmbedder
from apps.models.rerank import EmbeddingReranker
from apps.models.text import E5Embedder, SentenceTransformerEmbedder


def assert_unit_rows(vectors: np.ndarray, dim: int) -> None:
    assert vectors.dtype == np.float32
    assert vectors.shape[1] == dim
    assert vectors.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


def test_minilm_embeds_384_dimensional_unit_vectors(minilm: SentenceTransformerEmbedder) -> None:
    embedder: TextEmbedder = minilm
    vectors = embedder.embed_documents(["The cat sat on the mat.", "Stocks fell sharply today.", "A third one."])
    assert (embedder.name, embedder.dim) == ("all-MiniLM-L6-v2", 384)
    assert vectors.shape == (3, 384)
    assert_unit_rows(vectors, 384)


def test_minilm_puts_similar_sentences_closer_than_unrelated_ones(minilm: SentenceTransformerEmbedder) -> None:
    query = minilm.embed_queries(["How do I brew espresso at home?"])[0]
    related, unrelated = minilm.embed_documents(
        ["Making coffee with an espresso machine in your kitchen.", "The rocket launched from the pad at dusk."]
    )
    assert float(related @ query) > float(unrelated @ query) + 0.2


def test_minilm_queries_and_documents_share_one_space(minilm: SentenceTransformerEmbedder) -> None:
    text = ["knowledge graphs link entities"]
    np.testing.assert_allclose(minilm.embed_queries(text), minilm.embed_documents(text), atol=1e-6)


def test_minilm_batches_give_the_same_vectors_as_single_calls(minilm: SentenceTransformerEmbedder) -> None:
    texts = [f"sentence number {i} about topic {i % 7}" for i in range(70)]
    together = minilm.embed_documents(texts)
    np.testing.assert_allclose(together[65], minilm.embed_documents([texts[65]])[0], atol=1e-5)


@pytest.mark.parametrize("method", ["embed_documents", "embed_queries"])
def test_no_texts_give_an_empty_matrix(minilm: SentenceTransformerEmbedder, e5: E5Embedder, method: str) -> None:
    for embedder in (minilm, e5):
        empty = getattr(embedder, method)([])
        assert empty.shape == (0, embedder.dim)
        assert empty.dtype == np.float32


def test_e5_is_multilingual(e5: E5Embedder) -> None:
    embedder: TextEmbedder = e5
    query = embedder.embed_queries(["猫坐在垫子上。"])[0]
    translation, unrelated = embedder.embed_documents(
        ["The cat sat on the mat.", "Interest rates rose again this year."]
    )
    assert float(translation @ query) > float(unrelated @ query)


def test_e5_vectors_are_unit_rows_and_queries_differ_from_passages(e5: E5Embedder) -> None:
    texts = [f"passage {i}: graphs and vectors" for i in range(5)]
    passages = e5.embed_documents(texts)
    assert (e5.name, e5.dim) == ("multilingual-e5-small", 384)
    assert_unit_rows(passages, 384)
    # e5 prefixes "query: " and "passage: " differently, so the same text gives different vectors.
    assert not np.allclose(e5.embed_queries(texts[:1])[0], passages[0])


def test_e5_batches_larger_than_the_batch_size(e5: E5Embedder) -> None:
    texts = [f"line {i}" for i in range(70)]  # batch size 64: two batches
    vectors = e5.embed_documents(texts)
    assert vectors.shape == (70, 384)
    np.testing.assert_allclose(vectors[69], e5.embed_documents([texts[69]])[0], atol=1e-5)


def test_embedding_reranker_scores_the_relevant_passage_highest(minilm: SentenceTransformerEmbedder) -> None:
    reranker: Reranker = EmbeddingReranker(minilm)
    scores = reranker.rerank(
        "Where was the rocket launched?",
        ["An espresso in a red cup.", "The Falcon 9 rocket launched from Cape Canaveral.", "A tabby cat."],
    )
    assert len(scores) == 3
    assert max(range(3), key=scores.__getitem__) == 1
    assert all(-1.0 <= score <= 1.0 for score in scores)
    assert reranker.name == "cosine:all-MiniLM-L6-v2"
    assert reranker.rerank("anything", []) == []
