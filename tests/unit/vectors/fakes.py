"""Deterministic stand-ins for embedding models and data, for the vector layer's tests."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import Any

import numpy as np
import numpy.typing as npt

from apps.vectors.types import HnswParams, IvfPqParams, SpaceConfig, VectorItem

_WORD = re.compile(r"\w+")


def hashing_embed(texts: list[str], dim: int = 384) -> npt.NDArray[np.float32]:
    """Each word adds a fixed pseudo-random unit vector; texts sharing words end up close."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in _WORD.findall(text.lower()) or [""]:
            seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
            out[row] += np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out


def clustered(n: int, dim: int, *, seed: int = 0, clusters: int = 20) -> npt.NDArray[np.float32]:
    """Normalised vectors around a few centres (embeddings cluster; uniform noise does not)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    points = centres[rng.integers(0, clusters, n)] + 0.5 * rng.standard_normal((n, dim)).astype(np.float32)
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    return np.asarray(points, dtype=np.float32)


def node_id(i: int) -> str:
    """A graph-like 32-hex-digit node id."""
    return hashlib.sha256(f"node-{i}".encode()).hexdigest()[:32]


def space(index_type: str, *, dim: int = 32, model: str = "fake-model", **overrides: Any) -> SpaceConfig:
    """A small space: HNSW M=16, IVF-PQ trained from 39 * 4 = 156 vectors, exact filters up to 50."""
    base = SpaceConfig(
        space="text",
        dim=dim,
        model=model,
        index_type=index_type,
        hnsw=HnswParams(m=16, ef_construction=40, ef_search=32, max_tombstones=0.5),
        ivfpq=IvfPqParams(nlist=4, m=16, nbits=6, nprobe=4),
        filter_exact_max=50,
    )
    return dataclasses.replace(base, **overrides)


def items(start: int, stop: int, *, collection: str = "a", label: str = "Chunk") -> list[VectorItem]:
    return [VectorItem(node_id(i), label, collection) for i in range(start, stop)]
