"""The graph paths that led to each source, drawn as small server-rendered SVG diagrams.

``path_names`` looks up what the nodes of the paths are called (entities by name, units by a
piece of their text) and the predicate of each RELATED step, in two Cypher reads; when the graph
cannot be reached the drawing falls back to short ids and relationship types. ``path_drawing``
turns one path into positions and labels; ``templates/answers/path_steps.html`` draws it, so every
label is escaped by the template engine.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from neo4j import Driver
from neo4j.exceptions import Neo4jError, ServiceUnavailable, SessionExpired

from apps.graph import cypher
from apps.graph.db import graph_read

logger = logging.getLogger(__name__)

STEP = 170  # px between node centres
PAD = 60
NODE_Y = 34
HEIGHT = 76
LABEL_CHARS = 60  # the steps wrap, so names may be long


@dataclass(frozen=True)
class NodeName:
    label: str  # Entity, Chunk, Row or Image
    name: str


@dataclass(frozen=True)
class DrawnNode:
    x: int
    y: int
    text: str  # shortened, shown
    title: str  # whole, on hover
    entity: bool  # a circle; units are boxes


@dataclass(frozen=True)
class DrawnEdge:
    x1: int
    x2: int
    y: int
    label: str

    @property
    def label_x(self) -> int:
        return (self.x1 + self.x2) // 2


@dataclass(frozen=True)
class PathDrawing:
    width: int
    height: int
    nodes: tuple[DrawnNode, ...]
    edges: tuple[DrawnEdge, ...]
    score: float
    description: str  # the path in words, for screen readers

    @property
    def steps(self) -> list[dict[str, Any]]:
        """The path in reading order: a node, the label of the step to the next one, the next node, …"""
        sequence: list[dict[str, Any]] = []
        for index, node in enumerate(self.nodes):
            if index:
                sequence.append({"edge": self.edges[index - 1].label if index - 1 < len(self.edges) else ""})
            sequence.append({"node": node})
        return sequence

    @property
    def hops(self) -> int:
        return len(self.edges)


Names = Mapping[str, NodeName]
Predicates = Mapping[tuple[str, str], str]


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _is_entity(position: int, nodes: Sequence[str], relationships: Sequence[str], names: Names) -> bool:
    known = names.get(nodes[position])
    if known is not None:
        return known.label == "Entity"
    if "NEXT" in relationships or len(nodes) == 1:
        return False
    if 0 < position < len(nodes) - 1:
        return True
    return position == 0 and len(nodes) == 2  # a question entity that mentions the unit directly


def _node_text(node: str, entity: bool, names: Names, sources: Mapping[str, str]) -> str:
    if node in sources:
        return sources[node]
    known = names.get(node)
    if known is not None and known.name:
        return known.name if entity else f"{known.label.lower()}: {known.name}"
    return f"{'entity' if entity else 'node'} {node[:8]}"


def _edge_label(relationship: str, pair: tuple[str, str], target_is_entity: bool, predicates: Predicates) -> str:
    if relationship == "RELATED":
        return predicates.get(pair) or predicates.get((pair[1], pair[0])) or "related"
    if relationship == "MENTIONS":
        return "mentions" if target_is_entity else "mentioned in"
    return relationship.lower()


def path_drawing(
    path: Mapping[str, Any], *, names: Names, predicates: Predicates, sources: Mapping[str, str]
) -> PathDrawing:
    """One path (``{"nodes", "relationships", "score"}`` as ``Source.as_dict`` stores it) laid out
    left to right; ``sources`` names the answer's own sources by id ("[2] report.pdf")."""
    nodes = [str(node) for node in path.get("nodes") or []]
    relationships = [str(rel) for rel in path.get("relationships") or []]
    entity = [_is_entity(i, nodes, relationships, names) for i in range(len(nodes))]
    drawn = tuple(
        DrawnNode(
            PAD + i * STEP,
            NODE_Y,
            _short(text := _node_text(node, entity[i], names, sources)),
            text,
            entity[i],
        )
        for i, node in enumerate(nodes)
    )
    edges = tuple(
        DrawnEdge(
            drawn[i].x,
            drawn[i + 1].x,
            NODE_Y,
            _short(_edge_label(rel, (nodes[i], nodes[i + 1]), entity[i + 1], predicates), 20),
        )
        for i, rel in enumerate(relationships[: max(0, len(nodes) - 1)])
    )
    words = [drawn[0].title] if drawn else []
    for edge, node in zip(edges, drawn[1:], strict=False):
        words += [f"—{edge.label}→", node.title]
    return PathDrawing(
        width=max(1, len(nodes)) * STEP - STEP + 2 * PAD,
        height=HEIGHT,
        nodes=drawn,
        edges=edges,
        score=float(path.get("score") or 0.0),
        description=" ".join(words),
    )


def path_ids(sources: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Every node id on the sources' paths, and every pair of nodes joined by a RELATED step."""
    ids: dict[str, None] = {}
    pairs: list[list[str]] = []
    for source in sources:
        for path in source.get("path_details") or []:
            nodes = [str(node) for node in path.get("nodes") or []]
            ids.update(dict.fromkeys(nodes))
            for i, rel in enumerate(path.get("relationships") or []):
                if rel == "RELATED" and i + 1 < len(nodes):
                    pairs.append([nodes[i], nodes[i + 1]])
    return list(ids), pairs


def path_names(
    *, driver: Driver, sources: Sequence[Mapping[str, Any]], collections: list[str] | None
) -> tuple[dict[str, NodeName], dict[tuple[str, str], str]]:
    """The names of the paths' nodes (units only of ``collections``; None: all) and the RELATED
    predicates; empty when the graph cannot be reached (the drawing then shows short ids)."""
    ids, pairs = path_ids(sources)
    if not ids:
        return {}, {}
    try:
        rows = graph_read(driver, cypher.PATH_NODES, ids=ids, collections=collections)
        relations = graph_read(driver, cypher.PATH_PREDICATES, pairs=pairs) if pairs else []
    except (Neo4jError, ServiceUnavailable, SessionExpired, OSError) as exc:
        logger.warning("graph path names unavailable: %s", exc)
        return {}, {}
    names = {row["id"]: NodeName(row["label"], row["name"] or "") for row in rows}
    predicates = {(row["source"], row["target"]): row["predicate"] for row in relations if row["predicate"]}
    return names, predicates


def source_drawings(
    sources: Sequence[Mapping[str, Any]], *, names: Names, predicates: Predicates
) -> dict[str, list[PathDrawing]]:
    """Per source id, the drawings of the paths that reached it."""
    labels = {str(s.get("id")): f"[{s.get('number')}] {s.get('document') or s.get('kind', '')}" for s in sources}
    return {
        str(source.get("id")): [
            path_drawing(path, names=names, predicates=predicates, sources=labels)
            for path in source.get("path_details") or []
            if len(path.get("nodes") or []) > 1  # a lone seed is no path: the vector search found it
        ]
        for source in sources
    }
