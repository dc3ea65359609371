"""``VectorIndex``: the vectors of one embedding space, searchable, changeable and saved atomically.

Flat and HNSW indexes are an ``IndexIDMap2`` (vector id -> faiss position) over a base index searched by
inner product on L2-normalised vectors (so scores are cosine similarities):
- ``flat``: exact, removal supported natively;
- ``hnsw``: approximate graph; faiss cannot delete from it, so removed vectors become tombstones,
  hidden by a selector at search time, and the graph is rebuilt from its own stored vectors once
  tombstones pass ``max_tombstones`` of it (or when a removed or present id is added again);
- ``ivfpq``: exact (flat) until ``39 * nlist`` vectors exist, then trained once on them and migrated,
  after which vectors are compressed (lossy) and removed natively. A trained IVF index keeps the
  vector ids in its own lists and is not wrapped (see :func:`factory.trained_ivfpq`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from apps.vectors import factory
from apps.vectors._faiss import faiss
from apps.vectors.errors import IdCollision, IndexMismatch
from apps.vectors.filtering import (
    SearchResult,
    Subset,
    SubsetCache,
    exact_index,
    exact_search,
    overfetch_search,
    selector_for,
)
from apps.vectors.gpu import gpu_available, gpu_copy
from apps.vectors.ids import vector_ids
from apps.vectors.locks import ReadWriteLock
from apps.vectors.persistence import Manifest, snapshot_read, snapshot_write
from apps.vectors.sidecar import Sidecar
from apps.vectors.types import Hit, Ids, SpaceConfig, VectorItem, Vectors

logger = logging.getLogger(__name__)

# Fewer queries than this are searched on one OpenMP thread (see single_threaded).
SMALL_BATCH = 8


def prepare(vectors: npt.ArrayLike, dim: int, *, rows: int | None = None) -> Vectors:
    """A normalised float32 copy, one row per vector; refuses wrong shapes and non-finite values."""
    array = np.array(vectors, dtype=np.float32, order="C", ndmin=2)
    if array.ndim != 2 or array.shape[1] != dim:
        raise ValueError(f"expected vectors of dimension {dim}, got shape {array.shape}")
    if rows is not None and array.shape[0] != rows:
        raise ValueError(f"{rows} items but {array.shape[0]} vectors")
    if not bool(np.isfinite(array).all()):
        raise ValueError("vectors contain NaN or infinite values")
    faiss.normalize_L2(array)
    return array


@contextmanager
def single_threaded(enabled: bool) -> Iterator[None]:
    """Run faiss on one OpenMP thread in this thread (OpenMP's thread count is per calling thread).

    A query or a few gain nothing from OpenMP, and on a busy machine its threads waiting for
    each other cost milliseconds per call; batches keep all threads.
    """
    before = faiss.omp_get_max_threads()
    if not enabled or before == 1:
        yield
        return
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def rebuild_hint(space: str) -> str:
    return f"run `manage.py vectors rebuild --space {space}`"


def _check_matches(config: SpaceConfig, manifest: Manifest) -> None:
    if manifest.dimension != config.dim or manifest.model != config.model:
        raise IndexMismatch(
            f"the saved {config.space} index holds {manifest.dimension}-d vectors of model {manifest.model!r}, "
            f"but the configured embedder gives {config.dim}-d vectors of {config.model!r}: "
            f"{rebuild_hint(config.space)} to re-embed the graph with it"
        )


class VectorIndex:
    """One embedding space: a faiss index, the id -> graph node sidecar and HNSW tombstones."""

    def __init__(
        self,
        config: SpaceConfig,
        *,
        index: Any = None,
        sidecar: Sidecar | None = None,
        tombstones: Ids | None = None,
        index_type: str | None = None,
        version: int = 0,
        epoch: str = "",
        seq: int = 0,
        converted: bool = False,
    ) -> None:
        self.config = config
        self.converted = converted  # loaded from a snapshot of another HNSW storage (see load)
        self.index_type = index_type or config.index_type
        self.version = version
        self.epoch = epoch  # of the feed, and the change it stands at (a loaded snapshot's)
        self.seq = seq
        self._index = factory.new_index(config, self.index_type) if index is None else index
        self._sidecar = Sidecar() if sidecar is None else sidecar
        self._tombstones: Ids = np.empty(0, np.int64) if tombstones is None else np.sort(tombstones)
        self._lock = ReadWriteLock()
        self._subsets = SubsetCache()
        self._changes = 0
        self._gpu = threading.local()
        self._parameters: tuple[SpaceConfig, Any, Any] | None = None

    # --- facts ---------------------------------------------------------------------------

    @property
    def space(self) -> str:
        return self.config.space

    @property
    def dim(self) -> int:
        return self.config.dim

    @property
    def count(self) -> int:
        """Live vectors (tombstones excluded)."""
        return len(self._sidecar)

    @property
    def tombstones(self) -> int:
        return int(self._tombstones.size)

    @property
    def trained(self) -> bool:
        """For IVF-PQ, whether it has been trained (before that it is searched exactly)."""
        return factory.is_trained_ivf(self._index)

    def ids(self) -> Ids:
        """The live vector ids, sorted."""
        return self._sidecar.ids.copy()

    def ids_in(self, collections: set[str] | None) -> Ids:
        """The live vector ids of these collections (all when None), sorted."""
        return self.ids() if collections is None else self._sidecar.ids_in(collections)

    def entries(self, ids: Iterable[int]) -> list[VectorItem | None]:
        """The graph node behind each vector id (None for unknown ids)."""
        return self._sidecar.lookup(np.fromiter(ids, dtype=np.int64))

    def vectors(self, ids: Ids) -> tuple[Ids, Vectors]:
        """The stored vectors of those ``ids`` that are live (approximate for a trained IVF-PQ)."""
        with self._lock.reading():
            live = ids[self._sidecar.contains(ids)]
            if not live.size:
                return live, np.zeros((0, self.dim), np.float32)
            try:
                return live, np.asarray(self._index.reconstruct_batch(live), dtype=np.float32)
            except RuntimeError:  # a trained IVF-PQ keeps no id -> list map unless asked to
                logger.info("%s: no direct map for reconstruction; vectors are re-embedded instead", self.space)
                return live[:0], np.zeros((0, self.dim), np.float32)

    def size_bytes(self) -> int:
        """The size of the index as saved (a serialised copy is made: not for hot paths)."""
        with self._lock.reading():
            return len(faiss.serialize_index(self._index))

    def memory(self) -> dict[str, int]:
        """The bytes this copy holds, by part (the id map's reverse hash estimated at 40 bytes an entry)."""
        with self._lock.reading():
            parts = factory.index_memory(self._index)
            parts["sidecar"] = self._sidecar.nbytes() + int(self._tombstones.nbytes)
        parts["total"] = sum(parts.values())
        return parts

    def describe(self) -> dict[str, Any]:
        with self._lock.reading():
            return {
                "space": self.space,
                "index_type": self.index_type,
                "trained": self.trained,
                "dimension": self.dim,
                "model": self.config.model,
                "version": self.version,
                "count": self.count,
                "tombstones": self.tombstones,
                "storage": factory.hnsw_storage(self._index),
                "gpu": self._gpu_wanted(),
                **self._sidecar.counts(),
            }

    # --- changes -------------------------------------------------------------------------

    def add(self, items: Sequence[VectorItem], vectors: npt.ArrayLike) -> None:
        """Add (or replace) the vectors of these graph nodes."""
        x = prepare(vectors, self.dim, rows=len(items))
        ids, items, x = last_wins(vector_ids(item.node_id for item in items), items, x)
        if not len(items):
            return
        with self._lock.writing():
            self._check_collisions(ids, items)
            self._drop(ids)
            self._index.add_with_ids(x, ids)
            self._sidecar.add(ids, items)
            self._maybe_train()
            self._changed()

    def remove(self, ids: Iterable[int]) -> int:
        """Remove these vector ids (unknown ones are ignored); return how many were removed."""
        wanted = np.unique(np.fromiter(ids, dtype=np.int64))
        with self._lock.writing():
            removed = self._sidecar.remove(wanted)
            if not removed.size:
                return 0
            if self.index_type == "hnsw":
                self._tombstones = np.union1d(self._tombstones, removed)
                if self._tombstones.size > self.config.hnsw.max_tombstones * self._index.ntotal:
                    self._rebuild_hnsw()
            else:
                self._index.remove_ids(removed)
            self._changed()
            return int(removed.size)

    def _check_collisions(self, ids: Ids, items: Sequence[VectorItem]) -> None:
        for vid, known, item in zip(ids, self._sidecar.node_ids(ids), items, strict=True):
            if known is not None and known != item.node_id:
                raise IdCollision(f"nodes {known!r} and {item.node_id!r} share vector id {vid}")

    def _drop(self, ids: Ids) -> None:
        present = ids[self._sidecar.contains(ids)]
        if self.index_type == "hnsw":
            if present.size or np.isin(ids, self._tombstones).any():
                self._sidecar.remove(present)
                self._rebuild_hnsw(drop=ids)
        elif present.size:
            self._index.remove_ids(present)
            self._sidecar.remove(present)

    def _stored(self) -> tuple[Ids, Vectors]:
        """Every vector the (flat or HNSW) index stores, with its id, tombstones included."""
        ids = faiss.vector_to_array(self._index.id_map).astype(np.int64)
        return ids, self._index.index.reconstruct_n(0, self._index.ntotal)

    def _rebuild_hnsw(self, drop: Ids | None = None) -> None:
        ids, vectors = self._stored()
        keep = np.isin(ids, self._sidecar.ids)
        if drop is not None:
            keep &= ~np.isin(ids, drop)
        logger.info("rebuilding %s HNSW without %d removed vectors", self.space, int((~keep).sum()))
        self._index = factory.hnsw_from(self.config, ids[keep], vectors[keep])
        self._tombstones = np.empty(0, np.int64)

    def _maybe_train(self) -> None:
        if self.index_type != "ivfpq" or self.trained or self._index.ntotal < self.config.ivfpq.train_min:
            return
        ids, vectors = self._stored()
        index = factory.trained_ivfpq(self.dim, self.config.ivfpq, vectors)
        index.add_with_ids(vectors, ids)
        self._index = index
        logger.info("%s IVF-PQ trained: %d vectors moved from exact search", self.space, len(ids))

    def _changed(self) -> None:
        self._changes += 1
        self._subsets.clear()

    # --- search --------------------------------------------------------------------------

    def search(self, queries: npt.ArrayLike, k: int, *, collections: set[str] | None = None) -> list[list[Hit]]:
        """The ``k`` nearest vectors to each query, best first; only from ``collections`` when given."""
        if k < 1:
            raise ValueError("k must be at least 1")
        q = prepare(queries, self.dim)
        self._lock.acquire_read()  # (not a with-block: this is the hot path)
        try:
            with single_threaded(len(q) < SMALL_BATCH):
                distances, labels = self._search(q, k, collections)
        finally:
            self._lock.release_read()
        return [
            [Hit(label, score) for score, label in zip(d_row, l_row, strict=True) if label >= 0]
            for d_row, l_row in zip(distances.tolist(), labels.tolist(), strict=True)
        ]

    def _search(self, q: Vectors, k: int, collections: set[str] | None) -> SearchResult:
        nothing = (np.zeros((len(q), 0), np.float32), np.zeros((len(q), 0), np.int64))
        if not self.count:
            return nothing
        subset = None if collections is None and not self.tombstones else self._subset(collections)
        if subset is not None and not subset.ids.size:
            return nothing
        gpu = self._gpu_index()
        if gpu is not None:
            return overfetch_search(
                partial(_search_translated, *gpu), q, k, None if subset is None else subset.ids, self._index.ntotal
            )
        result: SearchResult
        if subset is None:
            result = self._index.search(q, k, params=self._default_parameters())
            return result
        if self.index_type == "hnsw" and subset.ids.size <= self.config.filter_exact_max:
            if subset.exact is None:
                subset.exact = exact_index(subset.ids, self._index.reconstruct_batch(subset.ids))
            return exact_search(subset.exact, q, k)
        params = factory.search_parameters(self.config, self._index, selector=subset.selector, fraction=subset.fraction)
        result = self._index.search(q, k, params=params)
        return result

    def _default_parameters(self) -> Any:
        """Search parameters without a filter, made once per index and configuration."""
        cached = self._parameters
        if cached is None or cached[0] is not self.config or cached[1] is not self._index:
            cached = (self.config, self._index, factory.search_parameters(self.config, self._index))
            self._parameters = cached
        return cached[2]

    def _subset(self, collections: set[str] | None) -> Subset:
        key = None if collections is None else frozenset(collections)
        return self._subsets.get(key, partial(self._build_subset, key))

    def _build_subset(self, key: frozenset[str] | None) -> Subset:
        if key is None:
            ids = self._sidecar.ids
            selector, keep = selector_for(self._tombstones, exclude=True)
        else:
            ids = self._sidecar.ids_in(set(key))
            selector, keep = selector_for(ids)
        return Subset(ids, selector, ids.size / max(self._index.ntotal, 1), keep)

    # --- GPU -----------------------------------------------------------------------------

    def _gpu_wanted(self) -> bool:
        return self.config.use_gpu and self.index_type != "hnsw" and gpu_available()

    def _gpu_index(self) -> tuple[Any, Ids | None] | None:
        """This thread's GPU copy of the index, remade after each change; None on the CPU path."""
        if not self._gpu_wanted():
            return None
        cached = getattr(self._gpu, "copy", None)
        if cached is None or cached[0] != self._changes:
            cached = (self._changes, *gpu_copy(self._index))
            self._gpu.copy = cached
        return cached[1], cached[2]

    # --- persistence ---------------------------------------------------------------------

    def save(self, directory: Path, *, epoch: str = "", seq: int = 0) -> Manifest:
        """Write this index as the next version in ``directory`` (atomically, see persistence), noting
        the feed's ``epoch`` and the change ``seq`` it stands at."""
        fields: dict[str, Any] = {
            "space": self.space,
            "dimension": self.dim,
            "index_type": self.index_type,
            "model": self.config.model,
            "epoch": epoch,
            "seq": seq,
        }
        with self._lock.reading():
            fields["trained"] = self.trained
            manifest = snapshot_write(
                directory,
                fields=fields,
                index=self._index,
                sidecar=self._sidecar,
                tombstones=self._tombstones,
                after=self.version,
            )
        self.version, self.epoch, self.seq = manifest.version, epoch, seq
        return manifest

    @classmethod
    def load(cls, directory: Path, config: SpaceConfig) -> VectorIndex:
        """Load the saved version; IndexMissing, IndexCorrupt or IndexMismatch (model or dimension changed)."""
        snapshot = snapshot_read(directory, check=partial(_check_matches, config))
        manifest = snapshot.manifest
        if manifest.index_type != config.index_type:
            logger.warning(
                "the saved %s index is %s, settings ask for %s: %s to switch",
                config.space, manifest.index_type, config.index_type, rebuild_hint(config.space),
            )  # fmt: skip
        index = snapshot.index
        converted = factory.hnsw_storage(index) not in (None, config.hnsw.storage)
        if converted:
            index = factory.hnsw_restored(index, config)
        return cls(
            config,
            index=index,
            sidecar=snapshot.sidecar,
            tombstones=snapshot.tombstones,
            index_type=manifest.index_type,
            version=manifest.version,
            epoch=manifest.epoch,
            seq=manifest.seq,
            converted=converted,
        )


def _search_translated(index: Any, id_map: Ids | None, queries: Vectors, k: int) -> SearchResult:
    distances, positions = index.search(queries, k)
    if id_map is None:
        return distances, positions
    labels = np.where(positions >= 0, id_map[np.maximum(positions, 0)], -1)
    return distances, labels.astype(np.int64)


def last_wins(ids: Ids, items: Sequence[VectorItem], x: Vectors) -> tuple[Ids, list[VectorItem], Vectors]:
    """One entry per id (the last one given); two different nodes with one id are a collision."""
    last: dict[int, int] = {}
    for row, (vid, item) in enumerate(zip(ids.tolist(), items, strict=True)):
        if vid in last and items[last[vid]].node_id != item.node_id:
            raise IdCollision(f"nodes {items[last[vid]].node_id!r} and {item.node_id!r} share vector id {vid}")
        last[vid] = row
    if len(last) == len(ids):  # no id twice: nothing to copy
        return ids, list(items), x
    rows = sorted(last.values())
    return ids[rows], [items[row] for row in rows], x[rows]
