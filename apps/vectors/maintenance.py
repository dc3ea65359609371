"""Keeping the vectors in step with the graph: rebuild from Neo4j, check, repair.

The shared store (apps/vectors/store.py) is compared with the graph, and this host's copy
(apps/vectors/registry.py) with the store.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from itertools import islice
from typing import Any

from neo4j import Driver

from apps.vectors.config import check_space, space_config
from apps.vectors.embedding import embed_checked
from apps.vectors.errors import EmbedderUnavailable
from apps.vectors.graph import Unit, graph_units, graph_units_by_id
from apps.vectors.ids import vector_id
from apps.vectors.registry import vector_registry
from apps.vectors.services import vectors_add, vectors_remove
from apps.vectors.spaces import collection_space_set, collection_spaces
from apps.vectors.store import store_changed_after, store_clear, store_ids
from apps.vectors.types import EmbedFn, SpaceConfig, VectorItem

logger = logging.getLogger(__name__)


@dataclass
class RebuildReport:
    space: str
    index_type: str
    count: int
    labels: dict[str, int]
    seconds: float


@dataclass
class CheckReport:
    """The graph against the store (``graph``, ``stored``, ``missing``, ``extra``), and this host's copy
    against the store (``host``, ``host_missing``, ``host_extra``: node ids)."""

    space: str
    graph: int
    stored: int
    host: int = 0
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    collisions: list[str] = field(default_factory=list)
    host_missing: list[str] = field(default_factory=list)
    host_extra: list[str] = field(default_factory=list)
    added: int = 0
    removed: int = 0
    reloaded: bool = False

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.collisions or self.host_missing or self.host_extra)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def _batches[T](items: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _add_units(config: SpaceConfig, units: list[Unit], embed: EmbedFn) -> None:
    vectors = embed_checked(embed, [unit.content for unit in units], dim=config.dim, space=config.space)
    vectors_add(
        space=config.space,
        items=[VectorItem(unit.node_id, unit.label, unit.collection) for unit in units],
        vectors=vectors,
    )


def vectors_rebuild(*, driver: Driver, space: str, embed: EmbedFn, batch_size: int = 256) -> RebuildReport:
    """Re-embed every node of the space from the graph into the store, in place of what it held.

    The stored vectors are dropped first and the feed gets a new epoch (and the configured model),
    so every host rebuilds its copy; searches meanwhile find the vectors re-embedded so far."""
    started = time.perf_counter()
    config = space_config(check_space(space))
    store_clear(config)
    labels: Counter[str] = Counter()
    for batch in _batches(graph_units(driver=driver, space=space, with_content=True), batch_size):
        _add_units(config, batch, embed)
        labels.update(unit.label for unit in batch)
    index = vector_registry().reload(space)
    report = RebuildReport(space, index.index_type, sum(labels.values()), dict(labels),
                           round(time.perf_counter() - started, 2))  # fmt: skip
    logger.info("rebuilt %s vectors: %d in %.1fs", space, report.count, report.seconds)
    return report


@dataclass(frozen=True)
class RespaceReport:
    collection: str
    before: str
    after: str
    moved: int
    seconds: float


def collection_respace(
    *, driver: Driver, collection: str, space: str, embed: EmbedFn, batch_size: int = 256
) -> RespaceReport:
    """Move a collection's texts to another text space: it is put there, its vectors leave the old
    space and its units are embedded into the new one from the graph (the other collections are not
    touched). Until it finishes, searches find the units re-embedded so far."""
    started = time.perf_counter()
    before = collection_spaces([collection])[collection]
    collection_space_set(collection, space)
    if before != space:
        vectors_remove(space=before, node_ids=store_ids(before, {collection}).values())
    moved = 0
    config = space_config(check_space(space))
    for batch in _batches(
        graph_units(driver=driver, space=space, with_content=True, collections={collection}), batch_size
    ):
        _add_units(config, batch, embed)
        moved += len(batch)
    report = RespaceReport(collection, before, space, moved, round(time.perf_counter() - started, 2))
    logger.info("collection %s: %s -> %s, %d vectors in %.1fs", collection, before, space, moved, report.seconds)
    return report


def vectors_check(
    *,
    driver: Driver,
    space: str,
    collections: set[str] | None = None,
    repair: bool = False,
    embed: EmbedFn | None = None,
    batch_size: int = 256,
) -> CheckReport:
    """Compare the store with the graph (nodes without a vector, vectors without a node) and this
    host's copy with the store.

    With ``repair`` the extra vectors are removed from the store and the missing ones embedded
    (``embed`` is then required if any are missing) and added; a copy that differs from the store
    is built again from it."""
    config = space_config(check_space(space))
    graph: dict[int, Unit] = {}
    collisions = []
    for unit in graph_units(driver=driver, space=space, with_content=False, collections=collections):
        vid = vector_id(unit.node_id)
        if vid in graph and graph[vid].node_id != unit.node_id:
            collisions.append(unit.node_id)
        graph[vid] = unit
    stored = store_ids(space, collections)
    missing = [graph[vid] for vid in graph.keys() - stored.keys()]
    extra = sorted(stored.keys() - graph.keys())
    report = CheckReport(
        space,
        graph=len(graph),
        stored=len(stored),
        missing=sorted(unit.node_id for unit in missing),
        extra=sorted(stored[vid] for vid in extra),
        collisions=sorted(collisions),
    )
    _compare_host(report, collections)
    if repair and not report.ok:
        _repair(config, report, missing, extra, stored, driver=driver, embed=embed, batch_size=batch_size)
        if report.host_missing or report.host_extra:
            vector_registry().reload(space)
            report.reloaded = True
    return report


def _compare_host(report: CheckReport, collections: set[str] | None) -> None:
    """This host's copy against the store, over the vectors no change after the copy's position touched."""
    registry = vector_registry()
    index = registry.get(report.space)
    position = registry.position(report.space)
    seq = position[1] if position else 0
    stored = store_ids(report.space, collections, upto=seq)
    moving = store_changed_after(report.space, seq)
    ids = index.ids_in(collections).tolist()
    held = {vid: entry.node_id for vid, entry in zip(ids, index.entries(ids), strict=True) if entry is not None}
    report.host = len(held)
    report.host_missing = sorted(stored[vid] for vid in stored.keys() - held.keys() - moving)
    report.host_extra = sorted(held[vid] for vid in held.keys() - stored.keys() - moving)


def _repair(
    config: SpaceConfig,
    report: CheckReport,
    missing: list[Unit],
    extra: list[int],
    stored: dict[int, str],
    *,
    driver: Driver,
    embed: EmbedFn | None,
    batch_size: int,
) -> None:
    if missing and embed is None:
        raise EmbedderUnavailable(f"{len(missing)} {config.space} vectors are missing and no embedder was given")
    report.removed = vectors_remove(space=config.space, node_ids=[stored[vid] for vid in extra])
    if embed is not None:
        report.added = _add_missing(config, missing, driver=driver, embed=embed, batch_size=batch_size)
    logger.info("repaired %s vectors: %d added, %d removed", config.space, report.added, report.removed)


def _add_missing(config: SpaceConfig, missing: list[Unit], *, driver: Driver, embed: EmbedFn, batch_size: int) -> int:
    """Embed and add these nodes, reading their content from the graph (one query per label and batch)."""
    by_label: defaultdict[str, list[str]] = defaultdict(list)
    for unit in missing:
        by_label[unit.label].append(unit.node_id)
    added = 0
    for label, node_ids in by_label.items():
        for chunk in _batches(node_ids, batch_size):
            units = graph_units_by_id(driver=driver, space=config.space, label=label, node_ids=chunk)
            if units:
                _add_units(config, units, embed)
                added += len(units)
    return added
