"""Rerankers: cosine re-scoring with the text embedder (offline) or a cross-encoder (hub)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from apps.models.devices import select_device
from apps.models.interfaces import TextEmbedder

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

logger = logging.getLogger(__name__)


class EmbeddingReranker:
    """Scores each passage by the cosine of its embedding with the query's (no cross-encoder
    ships in any package); the scores are in [-1, 1]."""

    def __init__(self, embedder: TextEmbedder) -> None:
        self._embedder = embedder

    @property
    def name(self) -> str:
        return f"cosine:{self._embedder.name}"

    @property
    def embedder(self) -> TextEmbedder:
        return self._embedder

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        query_vector = self._embedder.embed_queries([query])[0]
        passage_vectors = self._embedder.embed_documents(passages)
        return [float(score) for score in passage_vectors @ query_vector]


class CrossEncoderReranker:
    """Scores (query, passage) pairs with a sentence-transformers ``CrossEncoder``."""

    def __init__(self, model: CrossEncoder, *, name: str, batch_size: int) -> None:
        self._model = model
        self._name = name
        self._batch_size = batch_size

    @property
    def name(self) -> str:
        return self._name

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        scores = self._model.predict(
            [(query, passage) for passage in passages], batch_size=self._batch_size, show_progress_bar=False
        )
        return [float(score) for score in scores]


def load_cross_encoder(model_id: str, *, device: str, batch_size: int) -> CrossEncoderReranker:
    """A cross-encoder by hub id (downloads on first use)."""
    from sentence_transformers import CrossEncoder

    resolved = select_device(device)
    model = CrossEncoder(model_id, device=resolved)
    if resolved == "cuda":
        model.half()
    logger.info("loaded reranker %s on %s", model_id, resolved)
    return CrossEncoderReranker(model, name=model_id, batch_size=batch_size)
