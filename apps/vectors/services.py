"""The vector store's operations: add, remove and search the vectors of graph nodes, per space.

Writes take the space's writer lock, start from its latest state and commit their change to the
space's journal (folded into a new snapshot now and then), so any number of processes may call
them; searches use this process's registry, which reloads when another process saved a newer
version and replays the journal records it has not seen.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from apps.vectors.config import check_space
from apps.vectors.ids import vector_id
from apps.vectors.index import prepare
from apps.vectors.journal import Change, journal_path, journal_size
from apps.vectors.persistence import manifest_read
from apps.vectors.registry import vector_registry
from apps.vectors.types import VectorItem, VectorMatch

logger = logging.getLogger(__name__)


def vectors_add(*, space: str, items: Sequence[VectorItem], vectors: npt.ArrayLike, save: bool = True) -> int:
    """Add (or replace) the vectors of these graph nodes, one row of ``vectors`` per item; then commit
    (a journal record; the registry folds the journal into a snapshot when it has grown)."""
    registry = vector_registry()
    with registry.writing(check_space(space)) as index:
        rows = prepare(vectors, index.dim, rows=len(items))
        index.add(items, rows)
        if save:
            registry.commit(space, index, Change(items=tuple(items), vectors=rows))
    logger.debug("added %d %s vectors", len(items), space)
    return len(items)


def vectors_remove(*, space: str, node_ids: Iterable[str], save: bool = True) -> int:
    """Remove the vectors of these graph nodes (unknown ones are ignored); return how many were removed."""
    registry = vector_registry()
    with registry.writing(check_space(space)) as index:
        ids = np.fromiter((vector_id(node_id) for node_id in node_ids), dtype=np.int64)
        removed = index.remove(ids)
        if save and removed:
            registry.commit(space, index, Change(removed=ids))
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
    """What this process has loaded for the space, and what is saved."""
    registry = vector_registry()
    info = registry.get(check_space(space)).describe()
    info["directory"] = str(registry.directory(space))
    try:
        manifest = manifest_read(registry.directory(space))
    except Exception as exc:  # shown, not raised: info must work on a broken index
        info["saved"] = {"error": f"{type(exc).__name__}: {exc}"}
    else:
        journal = journal_size(journal_path(registry.directory(space), manifest.version))
        info["saved"] = {
            "version": manifest.version,
            "saved_at": manifest.saved_at,
            "count": manifest.count,
            "journal_bytes": journal,
        }
    return info
