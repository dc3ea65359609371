"""What the graph explorer (``/graph/``) reads: entities by name, an entity's neighbourhood, the units
that mention it, and the subgraph of an answer's paths.

Every read takes the reader's ``collections`` (None: every collection, admins) and passes it into its
Cypher (``apps.graph.cypher``, the ``GRAPH_*`` statements), so nothing of an unreadable collection is
ever fetched: an entity counts when a readable unit mentions it, a RELATED edge when a readable
document supports it. Every result is bounded: ``NODE_CAP`` nodes and ``EDGE_CAP`` edges per graph,
and the caps travel with the graph so the page can state them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from neo4j import Driver

from apps.graph import cypher
from apps.graph.db import graph_read
from apps.graph.evidence import relation_evidence, snippet

NODE_CAP = 60
EDGE_CAP = 150
SEARCH_LIMIT = 20
UNITS_LIMIT = 20
UNIT_TEXT_CHARS = 2000
QUERY_CHARS = 200

Collections = Sequence[str] | None


@dataclass(frozen=True)
class Filters:
    """The neighbourhood's filters: entity types and edge kinds (a predicate or ``synonym``); None: all."""

    types: tuple[str, ...] | None = None
    relations: tuple[str, ...] | None = None


def _readable(collections: Collections) -> list[str] | None:
    return None if collections is None else list(collections)


def caps() -> dict[str, int]:
    return {"nodes": NODE_CAP, "edges": EDGE_CAP}


def entities_search(
    *, driver: Driver, query: str, collections: Collections, limit: int = SEARCH_LIMIT
) -> list[dict[str, Any]]:
    """Readable entities whose name or an alias contains ``query`` (any case), most mentioned first."""
    term = query.strip().lower()[:QUERY_CHARS]
    if not term:
        return []
    rows = graph_read(driver, cypher.GRAPH_ENTITY_SEARCH, query=term, collections=_readable(collections), limit=limit)
    return [{**row, "mentions": int(row["mentions"])} for row in rows]


def entity_read(*, driver: Driver, entity_id: str, collections: Collections) -> dict[str, Any] | None:
    """The entity (id, name, type, readable mentions), or None when it is missing or no readable unit
    mentions it: the two cannot be told apart."""
    rows = graph_read(driver, cypher.GRAPH_ENTITY, id=entity_id, collections=_readable(collections))
    return {**rows[0], "mentions": int(rows[0]["mentions"])} if rows else None


def _entity_node(row: Mapping[str, Any], *, center: bool = False) -> dict[str, Any]:
    return {
        "id": row["id"],
        "label": "Entity",
        "name": row.get("name") or "",
        "type": row.get("type") or "",
        "mentions": int(row.get("mentions") or 0),
        "center": center,
    }


def _edge(row: Mapping[str, Any]) -> dict[str, Any]:
    kind = str(row.get("kind") or "related")
    return {
        "id": f"{row['source']}|{kind}|{row['target']}",
        "source": row["source"],
        "target": row["target"],
        "type": row["type"],
        "kind": kind,
        "strength": round(float(row.get("strength") or 0.0), 3),
        "status": row.get("status") or "",
        "documents": int(row.get("documents") or 0),
        "evidence": relation_evidence(row),
    }


def edges_among(
    *, driver: Driver, ids: Sequence[str], collections: Collections, relations: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """The shown RELATED and SYNONYM edges among the entities ``ids``, at most ``EDGE_CAP``, strongest first."""
    params = {"ids": list(ids), "collections": _readable(collections), "limit": EDGE_CAP}
    rows = graph_read(driver, cypher.GRAPH_EDGES, relations=None if relations is None else list(relations), **params)
    return [_edge(row) for row in rows]


def neighbourhood(
    *, driver: Driver, entity_id: str, collections: Collections, filters: Filters = Filters()
) -> dict[str, Any] | None:
    """The entity, its strongest readable neighbours (up to ``NODE_CAP`` nodes in all) and the readable
    edges among them (up to ``EDGE_CAP``); None when the entity is not readable."""
    center = entity_read(driver=driver, entity_id=entity_id, collections=collections)
    if center is None:
        return None
    readable = _readable(collections)
    relations = None if filters.relations is None else list(filters.relations)
    types = None if filters.types is None else list(filters.types)
    [found] = graph_read(
        driver,
        cypher.GRAPH_NEIGHBOURS,
        id=entity_id,
        collections=readable,
        types=types,
        relations=relations,
        limit=NODE_CAP - 1,
    )
    nodes = [_entity_node(center, center=True), *(_entity_node(row) for row in found["rows"])]
    edges = edges_among(driver=driver, ids=[n["id"] for n in nodes], collections=collections, relations=relations)
    total = int(found["total"])
    return {
        "center": entity_id,
        "nodes": nodes,
        "edges": edges,
        "neighbours": {"total": total, "shown": len(nodes) - 1},
        "caps": caps(),
        "truncated": total > len(nodes) - 1 or len(edges) >= EDGE_CAP,
    }


def entity_units(*, driver: Driver, entity_id: str, collections: Collections) -> dict[str, Any] | None:
    """The readable chunks, rows and images that mention the entity (the first ``UNITS_LIMIT``, each with
    its text around the first mention and its document), or None when the entity is not readable."""
    entity = entity_read(driver=driver, entity_id=entity_id, collections=collections)
    if entity is None:
        return None
    rows = graph_read(
        driver, cypher.CURATION_ENTITY_SNIPPETS, id=entity_id, collections=_readable(collections), limit=UNITS_LIMIT
    )
    units = [
        {
            "id": row["unit"],
            "label": row["label"],
            "text": str(row["text"])[:UNIT_TEXT_CHARS],
            **snippet(str(row["text"]), row["start"], row["end"]),
            "document": {
                "id": row["document_id"],
                "title": row["title"] or row["path"] or "",
                "path": row["path"] or "",
                "collection": row["collection"],
            },
        }
        for row in rows
    ]
    return {"entity": entity, "units": units, "total": entity["mentions"], "limit": UNITS_LIMIT}


# --- an answer's paths ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    source: str
    target: str
    relationship: str  # MENTIONS, RELATED, SYNONYM or NEXT, as the path stored it


def answer_paths(sources: Sequence[Mapping[str, Any]]) -> list[tuple[list[str], list[str]]]:
    """Every stored path of the answer's sources, in the sources' order: its node ids and relationship types."""
    paths: list[tuple[list[str], list[str]]] = []
    for source in sources:
        details = source.get("path_details") or [{"nodes": p} for p in source.get("paths") or []]
        for path in details:
            nodes = [str(node) for node in path.get("nodes") or []]
            paths.append((nodes, [str(rel) for rel in path.get("relationships") or []]))
    return paths


def capped_paths(paths: Sequence[tuple[list[str], list[str]]]) -> tuple[list[str], list[Step], bool]:
    """The node ids and steps of as many whole paths as fit in ``NODE_CAP`` nodes and ``EDGE_CAP`` edges,
    and whether some were left out."""
    ids: dict[str, None] = {}
    steps: dict[tuple[str, str], Step] = {}
    truncated = False
    for nodes, relationships in paths:
        new_ids = [n for n in dict.fromkeys(nodes) if n not in ids]
        new_steps = {}
        for i in range(len(nodes) - 1):
            rel = relationships[i] if i < len(relationships) else "RELATED"
            key = (nodes[i], nodes[i + 1])
            if key not in steps and (key[1], key[0]) not in steps and nodes[i] != nodes[i + 1]:
                new_steps[key] = Step(nodes[i], nodes[i + 1], rel)
        if len(ids) + len(new_ids) > NODE_CAP or len(steps) + len(new_steps) > EDGE_CAP:
            truncated = True
            continue
        ids.update(dict.fromkeys(new_ids))
        steps.update(new_steps)
    return list(ids), list(steps.values()), truncated


def _step_kind(step: Step, labels: Mapping[str, str], predicates: Mapping[tuple[str, str], str]) -> str:
    if step.relationship == "RELATED":
        pair = (step.source, step.target)
        return predicates.get(pair) or predicates.get((pair[1], pair[0])) or "related"
    if step.relationship == "MENTIONS":
        return "mentions" if labels.get(step.target) == "Entity" else "mentioned in"
    return step.relationship.lower()


def answer_subgraph(
    *, driver: Driver, sources: Sequence[Mapping[str, Any]], collections: Collections
) -> dict[str, Any]:
    """The nodes and steps of the answer's paths that the reader may see (within the caps), the
    answer's own sources marked ``source``."""
    ids, steps, truncated = capped_paths(answer_paths(sources))
    readable = _readable(collections)
    rows = graph_read(driver, cypher.GRAPH_PATH_NODES, ids=ids, collections=readable) if ids else []
    found = {row["id"]: row for row in rows}
    numbers = {str(s.get("id")): s.get("number") for s in sources}
    pairs = [[s.source, s.target] for s in steps if s.relationship == "RELATED"]
    predicate_rows = (
        graph_read(driver, cypher.GRAPH_PATH_PREDICATES, pairs=pairs, collections=readable) if pairs else []
    )
    predicates = {(r["source"], r["target"]): r["predicate"] for r in predicate_rows if r["predicate"]}
    labels = {node_id: str(row["label"]) for node_id, row in found.items()}
    nodes = [
        {
            "id": node_id,
            "label": row["label"],
            "name": row["name"] or "",
            "type": row["type"] or "",
            "document": row["document"] or "",
            "source": node_id in numbers,
            "number": numbers.get(node_id),
        }
        for node_id, row in ((i, found[i]) for i in ids if i in found)
    ]
    edges = [
        {
            "id": f"{s.source}|{s.relationship}|{s.target}",
            "source": s.source,
            "target": s.target,
            "type": s.relationship,
            "kind": _step_kind(s, labels, predicates),
        }
        for s in steps
        if s.source in found and s.target in found
    ]
    return {"nodes": nodes, "edges": edges, "caps": caps(), "truncated": truncated}
