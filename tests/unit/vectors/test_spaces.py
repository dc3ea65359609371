"""Each collection's text space (apps/vectors/spaces.py): decided by the first documents' language,
kept, and used all the way: the question embedded once per space its collections use, each space
searched, its scores put on one scale, the candidates' vectors read from their own space."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.answers.pipeline import RetrievalParams, RetrievalTools, retrieve
from apps.answers.rerank import attach_vectors, rerank_scores
from apps.answers.seeds import SeedLimits, seeds_search
from apps.answers.selection import SelectionParams, sources_select
from apps.answers.types import Candidate
from apps.vectors.spaces import (
    collection_space_settle,
    collection_spaces,
    multilingual_collections,
    space_for_language,
    space_score,
    text_spaces_of,
)
from apps.vectors.types import VectorMatch
from tests.unit.accounts.test_scope import RecordingDriver


def test_auto_puts_collections_not_in_english_in_the_multilingual_space() -> None:
    assert space_for_language("en", setting="auto", text_embedder="minilm") == "text"
    assert space_for_language("und", setting="auto", text_embedder="minilm") == "text"
    assert space_for_language("zh", setting="auto", text_embedder="minilm") == "mtext"
    assert space_for_language("de", setting="auto", text_embedder="minilm") == "mtext"
    assert space_for_language("zh", setting="auto", text_embedder="e5") == "text"  # multilingual already
    assert space_for_language("en", setting="mtext", text_embedder="minilm") == "mtext"
    assert space_for_language("zh", setting="text", text_embedder="minilm") == "text"


@pytest.mark.django_db
def test_a_collections_space_is_decided_once_by_its_first_documents(settings: SettingsWrapper) -> None:
    settings.COLLECTION_SPACE, settings.TEXT_EMBEDDER = "auto", "minilm"
    assert collection_space_settle("zh-docs", "zh") == "mtext"
    assert collection_space_settle("zh-docs", "en") == "mtext"  # kept: an English document joins it
    assert collection_space_settle("en-docs", "en") == "text"
    assert collection_spaces(["zh-docs", "en-docs", "new"]) == {"zh-docs": "mtext", "en-docs": "text", "new": "text"}
    assert collection_spaces(None) == {"zh-docs": "mtext"}
    assert multilingual_collections() == ["zh-docs"]
    assert text_spaces_of(["en-docs"]) == ("text",) and text_spaces_of(["zh-docs"]) == ("mtext",)
    assert text_spaces_of(["zh-docs", "en-docs"]) == text_spaces_of(None) == ("text", "mtext")


def test_multilingual_cosines_are_put_on_the_text_spaces_scale(settings: SettingsWrapper) -> None:
    settings.VECTORS_MTEXT_SCALE, settings.VECTORS_MTEXT_OFFSET = 2.0, -1.2
    assert space_score("text", 0.5) == 0.5
    assert space_score("mtext", 0.85) == pytest.approx(0.5)
    settings.VECTORS_MTEXT_CJK_SCALE, settings.VECTORS_MTEXT_CJK_OFFSET = 3.0, -2.0
    settings.VECTORS_MTEXT_CROSS_SCALE, settings.VECTORS_MTEXT_CROSS_OFFSET = 4.0, -2.5
    assert space_score("mtext", 0.85, cjk=True) == pytest.approx(0.55)
    assert space_score("mtext", 0.75, cjk=True, cross_script=True) == pytest.approx(0.5)
    assert space_score("text", 0.75, cjk=True, cross_script=True) == 0.75


def vector(*values: float) -> npt.NDArray[np.float32]:
    array = np.asarray(values, dtype=np.float32)
    return array / np.linalg.norm(array)


def test_each_text_space_is_searched_with_its_own_query_vector(settings: SettingsWrapper) -> None:
    settings.VECTORS_MTEXT_SCALE, settings.VECTORS_MTEXT_OFFSET = 2.0, -1.2
    searched: list[tuple[str, list[float]]] = []

    def search(*, space: str, queries: Any, k: int, collections: set[str] | None) -> list[list[VectorMatch]]:
        searched.append((space, queries[0].tolist()))
        found = {"text": VectorMatch("en-1", "Chunk", "en", 0.6), "mtext": VectorMatch("zh-1", "Chunk", "zh", 0.85)}
        return [[found[space]]]

    vectors = {"text": vector(1, 0), "mtext": vector(0, 1)}
    seeds = seeds_search(vectors=vectors, limits=SeedLimits(), collections=["en", "zh"], search=search)
    assert searched == [("text", [1.0, 0.0]), ("mtext", [0.0, 1.0])]
    assert [(seed.node_id, seed.space, round(seed.score, 3)) for seed in seeds] == [
        ("en-1", "text", 0.6),
        ("zh-1", "mtext", 0.5),  # 2.0 * 0.85 - 1.2
    ]


def test_candidates_are_scored_in_their_collections_space_and_never_compared_across_spaces(
    settings: SettingsWrapper,
) -> None:
    settings.VECTORS_MTEXT_SCALE, settings.VECTORS_MTEXT_OFFSET = 1.0, 0.0
    stored = {"text": {"a": vector(1, 0)}, "mtext": {"b": vector(1, 0)}}
    looked: list[tuple[str, list[str]]] = []

    def stored_vectors(ids: Sequence[str], space: str) -> dict[str, npt.NDArray[np.float32]]:
        looked.append((space, list(ids)))
        return {node_id: stored[space][node_id] for node_id in ids if node_id in stored[space]}

    candidates = [
        Candidate("a", "Chunk", collection="en", text="a"),
        Candidate("b", "Chunk", collection="zh", text="b"),
    ]
    spaces = {"zh": "mtext"}

    def embed(space: str) -> Callable[[Sequence[str]], npt.NDArray[np.float32]]:
        return lambda texts: np.zeros((len(texts), 2), dtype=np.float32)  # never called: every vector is stored

    attach_vectors(candidates, stored_vectors, embed, lambda collection: spaces.get(collection, "text"))
    assert looked == [("text", ["a"]), ("mtext", ["b"])] or looked == [("mtext", ["b"]), ("text", ["a"])]
    assert [candidate.space for candidate in candidates] == ["text", "mtext"]
    query = {"text": vector(1, 0), "mtext": vector(0, 1)}
    assert rerank_scores(question="q", query_vectors=query, candidates=candidates, reranker=None) == pytest.approx(
        [1.0, 0.0]
    )
    # The same vector in two spaces is no duplicate: both are kept.
    for candidate in candidates:
        candidate.score = 1.0
    sources, _ = sources_select(candidates=candidates, entropy=3.0, params=SelectionParams(duplicate_cosine=0.9))
    assert [source.node_id for source in sources] == ["a", "b"]


class FakeEmbedder:
    def __init__(self, name: str, axis: int) -> None:
        self.name, self.dim, self.axis = name, 2, axis

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([vector(*(1.0 if i == self.axis else 0.0 for i in range(2))) for _ in texts])

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.embed_documents(texts)


def test_retrieval_embeds_the_question_only_in_the_spaces_its_collections_use() -> None:
    embedded: list[str] = []
    text, multilingual = FakeEmbedder("text", 0), FakeEmbedder("mtext", 1)

    def space_embedder(space: str) -> FakeEmbedder:
        embedded.append(space)
        return {"text": text, "mtext": multilingual}[space]

    searched: list[str] = []

    def search(*, space: str, queries: Any, k: int, collections: set[str] | None) -> list[list[VectorMatch]]:
        searched.append(space)
        return [[]]

    tools = RetrievalTools(
        driver=RecordingDriver(),  # type: ignore[arg-type]
        text=text,
        clip=None,
        reranker=None,
        tokenize=str.split,
        count_tokens=lambda value: len(value.split()),
        search=search,
        stored_vectors=lambda ids, space: {},
        space_embedder=space_embedder,
        collection_spaces=lambda names: {name: "mtext" if name.startswith("zh") else "text" for name in names or []},
    )
    params = RetrievalParams(mode="dense")
    retrieve(question="重排序的延迟是多少", collections=["zh-docs"], tools=tools, params=params)
    assert embedded == ["mtext"] and searched == ["mtext"]
    embedded.clear()
    searched.clear()
    retrieve(question="What is the latency?", collections=["zh-docs", "en-docs"], tools=tools, params=params)
    assert searched == ["text", "mtext"] and embedded == ["mtext"]  # "text" is ``tools.text`` itself
