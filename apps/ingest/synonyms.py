"""Synonym edges between entities whose names' embeddings are close (HippoRAG's synonymy edges).

Once a batch's documents are written, each of its entities without a name vector gets one (its
name embedded by the text encoder) and looks for its ``k`` nearest names in the graph, the other
new ones included, through the ``entity_name_vectors`` index. A pair at or above ``min_score``
(cosine) whose types may name one thing (``types_compatible``) becomes one ``SYNONYM`` edge,
scored and ``suggested``: a curator confirms or rejects it, and only a merge joins the two
entities. Entities are deleted with their edges, so a synonym edge lives exactly as long as both
its entities. Synonym edges are suggestions: when finding them fails, the documents stay written
and the failure is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import neo4j.exceptions
from neo4j import Driver

from apps.graph.identity import TITLE_LABEL, entity_group
from apps.graph.writer import (
    entities_with_vectors,
    entities_without_vectors,
    entity_neighbours,
    entity_vectors_write,
    synonym_edges_write,
)
from apps.models.interfaces import Vectors

logger = logging.getLogger(__name__)

Embed = Callable[[Sequence[str]], Vectors]


@dataclass(frozen=True)
class SynonymParams:
    k: int = 5  # nearest names asked for per new entity
    min_score: float = 0.8  # cosine of the names' embeddings


def types_compatible(first: str, second: str) -> bool:
    """Whether entities of these types may be one: the same identity group, or either a title."""
    return TITLE_LABEL in (first, second) or entity_group(first) == entity_group(second)


def _edge(source: str, target: str, score: float) -> dict[str, Any]:
    a, b = sorted((source, target))
    return {"source": a, "target": b, "score": round(float(score), 4)}


def neighbour_pairs(rows: Sequence[Mapping[str, Any]], found: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Edges from the index's answer (``source``, ``target``, ``type``, ``score`` records) whose
    types are compatible."""
    types = {row["id"]: row["type"] for row in rows}
    return [
        _edge(record["source"], record["target"], record["score"])
        for record in found
        if types_compatible(types[record["source"]], record["type"] or "")
    ]


def unique_edges(edges: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One edge per pair (the best score), in pair order (concurrent writers lock in one order)."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for edge in edges:
        key = (edge["source"], edge["target"])
        if key not in best or edge["score"] > best[key]["score"]:
            best[key] = edge
    return [best[key] for key in sorted(best)]


def entity_names_embed(*, driver: Driver, embed: Embed, entities: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``{id, type, vector}`` for each of these entity rows the graph holds no name vector for (new
    entities, and older ones written before names had vectors): their names embedded in one call."""
    names: dict[str, tuple[str, str]] = {}
    for row in entities:
        names.setdefault(row["id"], (row["name"], row["type"]))
    known = entities_with_vectors(driver=driver, ids=list(names))
    return _names_embed(embed, [(entity, name, kind) for entity, (name, kind) in names.items() if entity not in known])


def _names_embed(embed: Embed, entities: Sequence[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """``{id, type, vector}`` rows for (id, name, type) entities, their names embedded in one call."""
    if not entities:
        return []
    vectors = embed([name for _, name, _ in entities])
    return [
        {"id": entity, "type": kind, "vector": [float(x) for x in vector]}
        for (entity, _, kind), vector in zip(entities, vectors, strict=True)
    ]


def synonyms_link(*, driver: Driver, rows: Sequence[Mapping[str, Any]], params: SynonymParams) -> int:
    """Store the name vectors of written entities, then the synonym edges of each to its nearest
    names (``k`` of them, at or above ``min_score``); returns how many edges were asked for. A
    failure is logged and leaves the graph without those edges (they are suggestions)."""
    if not rows or params.k <= 0:
        return 0
    try:
        entity_vectors_write(driver=driver, rows=rows)
        found = entity_neighbours(driver=driver, rows=rows, k=params.k + 1, min_score=params.min_score)
        edges = unique_edges(neighbour_pairs(rows, found))
        synonym_edges_write(driver=driver, edges=edges)
    except neo4j.exceptions.Neo4jError as exc:
        logger.warning("synonym edges not added for %d entities: %s", len(rows), exc)
        return 0
    return len(edges)


def synonyms_backfill(*, driver: Driver, embed: Embed, params: SynonymParams, batch: int = 500) -> tuple[int, int]:
    """Name vectors and synonym edges for every entity that has no name vector (a graph written
    before names had them), ``batch`` entities at a time; returns (entities embedded, edges asked for)."""
    embedded = edges = 0
    after = ""
    while page := entities_without_vectors(driver=driver, after=after, limit=batch):
        after = page[-1]["id"]
        rows = _names_embed(embed, [(row["id"], row["name"] or "", row["type"] or "") for row in page])
        edges += synonyms_link(driver=driver, rows=rows, params=params)
        embedded += len(rows)
        logger.info("synonym backfill: %d entities embedded, %d edges so far", embedded, edges)
    return embedded, edges
