"""Value types of the vector layer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

SPACES = ("text", "mtext", "clip")
# The spaces of texts: a collection's chunks, rows and image texts are in one of them (its text space).
TEXT_SPACES = ("text", "mtext")
LABELS = ("Chunk", "Row", "Image")
INDEX_TYPES = ("flat", "hnsw", "ivfpq")

Vectors = npt.NDArray[np.float32]
Ids = npt.NDArray[np.int64]
# Strings in, one float32 row per string out: texts for the text space, image file paths for CLIP.
EmbedFn = Callable[[list[str]], npt.NDArray[np.floating]]


class Hit(NamedTuple):
    """One search result: the vector id and its cosine similarity to the query."""

    id: int
    score: float


class VectorItem(NamedTuple):
    """The graph node a vector stands for."""

    node_id: str
    label: str
    collection: str


class VectorMatch(NamedTuple):
    """A search result resolved to its graph node."""

    node_id: str
    label: str
    collection: str
    score: float


@dataclass(frozen=True)
class HnswParams:
    m: int = 32
    ef_construction: int = 80
    ef_search: int = 96
    max_tombstones: float = 0.2
    storage: str = "fp16"  # fp16 | flat (float32)


@dataclass(frozen=True)
class IvfPqParams:
    nlist: int = 1024
    m: int = 48
    nbits: int = 8
    nprobe: int = 32

    @property
    def train_min(self) -> int:
        """Vectors needed before training (faiss wants 39 points per centroid)."""
        return 39 * self.nlist


@dataclass(frozen=True)
class SpaceConfig:
    """How one embedding space is indexed (built from settings by :func:`apps.vectors.config.space_config`)."""

    space: str
    dim: int
    model: str
    index_type: str = "flat"
    hnsw: HnswParams = HnswParams()
    ivfpq: IvfPqParams = IvfPqParams()
    filter_exact_max: int = 4096
    use_gpu: bool = False

    def __post_init__(self) -> None:
        if self.index_type not in INDEX_TYPES:
            raise ValueError(f"unknown index type {self.index_type!r} (use one of {', '.join(INDEX_TYPES)})")
        if self.dim < 1:
            raise ValueError(f"dimension must be positive, not {self.dim}")
