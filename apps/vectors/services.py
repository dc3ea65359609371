"""The vector store's operations: add, remove and search the vectors of graph nodes, per space.

Writes go to the shared store (apps/vectors/store.py: the database every host reads) as one change
of the space's ordered feed; searches use this process's in-memory copy (apps/vectors/registry.py),
which follows that feed, so a vector written on any host is searchable on every host within
``VECTORS_SYNC_SECONDS``, and at once in the process that wrote it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from apps.vectors.config import check_space, space_config
from apps.vectors.errors import IdCollision
from apps.vectors.ids import vector_id, vector_ids
from apps.vectors.index import last_wins, prepare
from apps.vectors.persistence import manifest_read
from apps.vectors.registry import vector_registry
from apps.vectors.store import store_add, store_count, store_head, store_known, store_remove
from apps.vectors.types import Ids, VectorItem, VectorMatch

logger = logging.getLogger(__name__)


def vectors_add(*, space: str, items: Sequence[VectorItem], vectors: npt.ArrayLike) -> int:
    """Add (or replace) the vectors of these graph nodes, one row of ``vectors`` per item, as one change."""
    config = space_config(check_space(space))
    rows = prepare(vectors, config.dim, rows=len(items))
    ids, unique, rows = last_wins(vector_ids(item.node_id for item in items), items, rows)
    if not unique:
        return 0
    _check_collisions(space, ids, unique)
    store_add(config, ids, unique, rows)
    vector_registry().changed(space)
    logger.debug("added %d %s vectors", len(unique), space)
    return len(items)


def _check_collisions(space: str, ids: Ids, items: Sequence[VectorItem]) -> None:
    known = store_known(space, ids)
    for vid, item in zip(ids.tolist(), items, strict=True):
        if vid in known and known[vid] != item.node_id:
            raise IdCollision(f"nodes {known[vid]!r} and {item.node_id!r} share vector id {vid}")


def vectors_remove(*, space: str, node_ids: Iterable[str]) -> int:
    """Remove the vectors of these graph nodes (unknown ones are ignored); return how many were removed."""
    config = space_config(check_space(space))
    ids = np.unique(np.fromiter((vector_id(node_id) for node_id in node_ids), dtype=np.int64))
    removed = store_remove(config, ids) if ids.size else 0
    if removed:
        vector_registry().changed(space)
    return removed


def vectors_search(
    *, space: str, queries: npt.ArrayLike, k: int, collections: set[str] | None = None
) -> list[list[VectorMatch]]:
    """The ``k`` graph nodes nearest to each query vector, best first (only from ``collections`` if given)."""
    index = vector_registry().get(check_space(space))
    results = []
    for hits in index.search(queries, k, collections=collections):
        entries = index.entries(hit.id for hit in hits)
        results.append(
            [
                VectorMatch(entry.node_id, entry.label, entry.collection, hit.score)
                for hit, entry in zip(hits, entries, strict=True)
                if entry is not None  # removed between search and lookup
            ]
        )
    return results


def vectors_get(*, space: str, node_ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
    """The stored vector of each of these graph nodes that has one."""
    index = vector_registry().get(check_space(space))
    wanted = {vector_id(node_id): node_id for node_id in node_ids}
    ids, vectors = index.vectors(np.fromiter(wanted, dtype=np.int64, count=len(wanted)))
    return {wanted[int(vid)]: vector for vid, vector in zip(ids.tolist(), vectors, strict=True)}


def vectors_info(*, space: str) -> dict[str, Any]:
    """What this process's copy holds, where the shared feed stands, and this host's local snapshot."""
    registry = vector_registry()
    info = registry.get(check_space(space)).describe()
    head = store_head(space)
    position = registry.position(space)
    info["directory"] = str(registry.directory(space))
    info["feed"] = {"seq": head.seq, "epoch": head.epoch, "stored": store_count(space), "pruned": head.pruned}
    info["copy_seq"] = position[1] if position else None
    try:
        manifest = manifest_read(registry.directory(space))
    except Exception as exc:  # shown, not raised: info must work without a snapshot
        info["saved"] = {"error": f"{type(exc).__name__}: {exc}"}
    else:
        info["saved"] = {"version": manifest.version, "saved_at": manifest.saved_at, "count": manifest.count,
                         "seq": manifest.seq}  # fmt: skip
    return info
