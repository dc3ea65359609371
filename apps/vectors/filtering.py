"""Restricting a search to some vectors: collections chosen at query time, and HNSW tombstones.

Three ways, by what the index can do:
- a faiss ``IDSelector`` passed in the search parameters (CPU indexes), with the search widened
  (HNSW ``efSearch``, IVF ``nprobe``) in proportion to how little the filter keeps;
- exact search over the kept vectors when they are few (HNSW only: a graph walk that may only
  visit a handful of allowed nodes misses them);
- over-fetch and filter, for indexes that take no selector (GPU indexes).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from apps.vectors._faiss import faiss
from apps.vectors.types import Ids, Vectors

# (distances, labels), as faiss returns them
SearchResult = tuple[npt.NDArray[np.float32], Ids]
SearchFn = Callable[[Vectors, int], SearchResult]

# GPU indexes return at most this many neighbours per query.
OVERFETCH_CAP = 2048


@dataclass
class Subset:
    """The live vectors a search may return: sorted ids and the faiss selector that admits them."""

    ids: Ids
    selector: Any
    fraction: float
    keep: list[Any] = field(default_factory=list)  # faiss objects the selector points into
    exact: tuple[Any, Ids] | None = None  # a flat index over the subset, and its position -> id map


def selector_for(ids: Ids, *, exclude: bool = False) -> tuple[Any, list[Any]]:
    """An IDSelector admitting exactly ``ids`` (or everything but them)."""
    batch = faiss.IDSelectorBatch(np.ascontiguousarray(ids, dtype=np.int64))
    if not exclude:
        return batch, [batch]
    negated = faiss.IDSelectorNot(batch)
    return negated, [batch, negated]


class SubsetCache:
    """Subsets by collection set, valid until the index changes (bounded, least recently used first out)."""

    def __init__(self, size: int = 32) -> None:
        self._size = size
        self._entries: OrderedDict[frozenset[str] | None, Subset] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: frozenset[str] | None, build: Callable[[], Subset]) -> Subset:
        with self._lock:
            subset = self._entries.get(key)
            if subset is None:
                subset = build()
                self._entries[key] = subset
                while len(self._entries) > self._size:
                    self._entries.popitem(last=False)
            else:
                self._entries.move_to_end(key)
            return subset

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def exact_index(ids: Ids, vectors: Vectors) -> tuple[Any, Ids]:
    """A flat inner-product index over a few vectors, searched instead of the graph."""
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    return index, ids


def exact_search(exact: tuple[Any, Ids], queries: Vectors, k: int) -> SearchResult:
    index, ids = exact
    distances, positions = index.search(queries, min(k, len(ids)))
    labels = np.where(positions >= 0, ids[np.maximum(positions, 0)], -1)
    return distances, labels.astype(np.int64)


def overfetch_search(search: SearchFn, queries: Vectors, k: int, allowed: Ids | None, total: int) -> SearchResult:
    """Search for more than ``k`` and keep the allowed ids, doubling until each query has ``k`` or all are seen."""
    fetch = min(max(k, k * 4), total, OVERFETCH_CAP)
    while True:
        distances, labels = search(queries, fetch)
        keep = labels >= 0
        if allowed is not None:
            keep &= np.isin(labels, allowed)
        if fetch >= min(total, OVERFETCH_CAP) or bool(np.all(keep.sum(axis=1) >= k)):
            return _compact_rows(distances, labels, keep, k)
        fetch = min(fetch * 2, total, OVERFETCH_CAP)


def _compact_rows(distances: npt.NDArray[np.float32], labels: Ids, keep: npt.NDArray[np.bool_], k: int) -> SearchResult:
    out_d = np.full((len(labels), k), -np.inf, dtype=np.float32)
    out_l = np.full((len(labels), k), -1, dtype=np.int64)
    for row in range(len(labels)):
        kept_l, kept_d = labels[row][keep[row]][:k], distances[row][keep[row]][:k]
        out_l[row, : len(kept_l)], out_d[row, : len(kept_d)] = kept_l, kept_d
    return out_d, out_l
