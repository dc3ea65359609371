"""Keeping the vector indexes in step with the graph: rebuild from Neo4j, check, repair."""

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
from apps.vectors.index import VectorIndex
from apps.vectors.registry import vector_registry
from apps.vectors.types import EmbedFn, VectorItem

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
    space: str
    graph: int
    index: int
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    collisions: list[str] = field(default_factory=list)
    added: int = 0
    removed: int = 0

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.collisions)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def _batches[T](items: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _add_units(index: VectorIndex, units: list[Unit], embed: EmbedFn) -> None:
    vectors = embed_checked(embed, [unit.content for unit in units], dim=index.dim, space=index.space)
    index.add([VectorItem(unit.node_id, unit.label, unit.collection) for unit in units], vectors)


def vectors_rebuild(*, driver: Driver, space: str, embed: EmbedFn, batch_size: int = 256) -> RebuildReport:
    """Re-embed every node of the space from the graph into a new index and save it in place of the old one.

    The old index is never read (it may be corrupt or of another model); the writer lock is held
    throughout, so ingestion waits and nothing written meanwhile is lost.
    """
    started = time.perf_counter()
    registry = vector_registry()
    index = VectorIndex(space_config(check_space(space)))
    labels: Counter[str] = Counter()
    with registry.locked(space):
        for batch in _batches(graph_units(driver=driver, space=space, with_content=True), batch_size):
            _add_units(index, batch, embed)
            labels.update(unit.label for unit in batch)
        registry.save(space, index)
    report = RebuildReport(space, index.index_type, index.count, dict(labels), round(time.perf_counter() - started, 2))
    logger.info("rebuilt %s vectors: %d in %.1fs", space, report.count, report.seconds)
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
    """Compare the index with the graph: nodes without a vector, vectors without a node.

    With ``repair`` the extra vectors are removed and the missing ones embedded (``embed`` is
    then required if any are missing) and added, and the index saved.
    """
    registry = vector_registry()
    with registry.writing(check_space(space)) as index:
        graph: dict[int, Unit] = {}
        collisions = []
        for unit in graph_units(driver=driver, space=space, with_content=False, collections=collections):
            vid = vector_id(unit.node_id)
            if vid in graph and graph[vid].node_id != unit.node_id:
                collisions.append(unit.node_id)
            graph[vid] = unit
        held = set(index.ids_in(collections).tolist())
        missing = [graph[vid] for vid in graph.keys() - held]
        extra = sorted(held - graph.keys())
        report = CheckReport(
            space,
            graph=len(graph),
            index=len(held),
            missing=sorted(unit.node_id for unit in missing),
            extra=sorted(entry.node_id for entry in index.entries(extra) if entry is not None),
            collisions=sorted(collisions),
        )
        if repair and not report.ok:
            _repair(index, report, missing, extra, driver=driver, embed=embed, batch_size=batch_size)
            registry.save(space, index)
    return report


def _repair(
    index: VectorIndex,
    report: CheckReport,
    missing: list[Unit],
    extra: list[int],
    *,
    driver: Driver,
    embed: EmbedFn | None,
    batch_size: int,
) -> None:
    if missing and embed is None:
        raise EmbedderUnavailable(f"{len(missing)} {index.space} vectors are missing and no embedder was given")
    report.removed = index.remove(extra)
    if embed is not None:
        report.added = _add_missing(index, missing, driver=driver, embed=embed, batch_size=batch_size)
    logger.info("repaired %s vectors: %d added, %d removed", index.space, report.added, report.removed)


def _add_missing(index: VectorIndex, missing: list[Unit], *, driver: Driver, embed: EmbedFn, batch_size: int) -> int:
    """Embed and add these nodes, reading their content from the graph (one query per label and batch)."""
    by_label: defaultdict[str, list[str]] = defaultdict(list)
    for unit in missing:
        by_label[unit.label].append(unit.node_id)
    added = 0
    for label, node_ids in by_label.items():
        for chunk in _batches(node_ids, batch_size):
            units = graph_units_by_id(driver=driver, space=index.space, label=label, node_ids=chunk)
            if units:
                _add_units(index, units, embed)
                added += len(units)
    return added
