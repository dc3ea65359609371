"""Image search with fake embedders, vector store and graph: the CLIP space when there is a CLIP
model, the images of the text space otherwise; only the readable collections, in both stores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import pytest

from apps.answers.images import ImageResults, images_search
from apps.answers.scope import EVERY_COLLECTION
from apps.answers.types import AnswerError
from apps.vectors.errors import IndexMissing
from apps.vectors.types import VectorMatch

CAT, DOG, CHUNK = "1" * 32, "2" * 32, "3" * 32


class Embedder:
    name, dim = "fake", 4

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        return np.ones((len(texts), 4), np.float32)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        return np.full((len(texts), 4), 0.5, np.float32)


class Store:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, *, space: str, queries: Any, k: int, collections: set[str] | None) -> list[list[VectorMatch]]:
        self.calls.append({"space": space, "k": k, "collections": collections, "rows": len(queries)})
        hits = [VectorMatch(CHUNK, "Chunk", "pets", 0.9), VectorMatch(CAT, "Image", "pets", 0.8)]
        return [[*hits, VectorMatch(DOG, "Image", "pets", 0.7)]]


class Graph:
    def __init__(self) -> None:
        self.params: dict[str, Any] = {}

    def execute_query(self, query: str, **params: Any) -> tuple[list[dict[str, Any]], None, None]:
        self.params = params
        rows = [
            {"id": CAT, "label": "Image", "document": "pets/cat.png", "collection": "pets", "text": "Image of a cat."},
        ]  # DOG is gone from the graph (or outside the collections): it is not shown
        return rows, None, None


def find(
    query: str, collections: Any, *, k: int = 3, clip: bool = False, store: Any = None, graph: Any = None
) -> ImageResults:
    """``images_search`` over the fakes."""
    return images_search(
        query=query,
        collections=collections,
        k=k,
        driver=cast(Any, graph if graph is not None else Graph()),
        text=cast(Any, Embedder()),
        clip=cast(Any, Embedder()) if clip else None,
        search=store if store is not None else Store(),
    )


def test_the_text_space_finds_images_by_their_text_when_there_is_no_clip() -> None:
    store, graph = Store(), Graph()
    results = find("  a   cat ", ["pets"], k=5, store=store, graph=graph)
    assert results.space == "text" and results.query == "a cat"
    assert [(hit.node_id, hit.document, hit.score) for hit in results.hits] == [(CAT, "pets/cat.png", 0.8)]
    assert store.calls == [{"space": "text", "k": 40, "collections": {"pets"}, "rows": 1}]
    assert graph.params["ids"] == [CAT, DOG] and graph.params["collections"] == ["pets"]


def test_with_clip_the_clip_space_is_searched() -> None:
    store, graph = Store(), Graph()
    results = find("a cat", EVERY_COLLECTION, clip=True, store=store, graph=graph)
    assert results.space == "clip" and [hit.node_id for hit in results.hits] == [CAT]
    assert store.calls == [{"space": "clip", "k": 3, "collections": None, "rows": 1}]
    assert graph.params["collections"] is None


def test_nothing_readable_finds_nothing_and_asks_no_store() -> None:
    store, graph = Store(), Graph()
    results = find("cat", [], store=store, graph=graph)
    assert results.hits == () and store.calls == [] and graph.params == {}


def test_failures_are_plain_messages() -> None:
    def missing(**kwargs: Any) -> list[list[VectorMatch]]:
        raise IndexMissing("nothing saved for clip")

    with pytest.raises(AnswerError, match="The image index cannot be used: nothing saved for clip"):
        find("cat", ["pets"], clip=True, store=missing)
    with pytest.raises(AnswerError, match="Please type a question"):
        find("  ", ["pets"])
