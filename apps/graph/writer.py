"""Write or delete documents' subgraphs, each call in a single Neo4j transaction.

A failure anywhere rolls the whole transaction back, so the documents of a
call are either fully in the graph or not at all, and no other document is
touched. Callers that need all-or-nothing *per document* retry a failed batch
one document at a time.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from django.conf import settings
from neo4j import Driver, ManagedTransaction

from apps.graph import cypher
from apps.graph.db import graph_read, graph_write

TITLE_LINK_LIMIT = 200  # chunks the full-text index offers per new title

Row = Mapping[str, Any]


class DocumentRows(Protocol):
    """One document's graph as batches of rows (see apps.ingest.graph_build)."""

    document: dict[str, Any]
    chunks: list[dict[str, Any]]
    next_links: list[dict[str, Any]]
    images: list[dict[str, Any]]
    tables: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    entities: list[dict[str, Any]]
    mentions: dict[str, list[dict[str, Any]]]
    relations: list[dict[str, Any]]
    title_links: list[dict[str, Any]]
    titles: list[dict[str, Any]]  # the title entity, as {id, name, query}: a Lucene phrase query for the name


def _run(tx: ManagedTransaction, statement: str, **params: Any) -> None:
    tx.run(statement, **params).consume()


def _delete(tx: ManagedTransaction, document_id: str) -> list[str] | None:
    """Delete the document; return the ids of its chunks, rows and images (None if it was not there)."""
    record = tx.run(cypher.DOCUMENT_UNIT_IDS, document_id=document_id).single()
    if record is None:
        return None
    units = [unit for unit in record["units"] if unit is not None]
    _run(tx, cypher.DOCUMENT_RELATIONS_RELEASE, document_id=document_id)
    _run(tx, cypher.DOCUMENT_ENTITIES_RELEASE, document_id=document_id)
    _run(tx, cypher.DOCUMENT_DELETE, document_id=document_id)
    return units


def _concat(lists: Iterable[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [row for rows in lists for row in rows]


def _write(tx: ManagedTransaction, graphs: Sequence[DocumentRows]) -> None:
    labels = sorted({label for graph in graphs for label in graph.mentions})
    batches: list[tuple[str, list[dict[str, Any]]]] = [
        (cypher.DOCUMENTS_CREATE, [dict(graph.document) for graph in graphs]),
        (cypher.CHUNKS_CREATE, _concat(graph.chunks for graph in graphs)),
        (cypher.CHUNKS_LINK_NEXT, _concat(graph.next_links for graph in graphs)),
        (cypher.IMAGES_CREATE, _concat(graph.images for graph in graphs)),
        (cypher.TABLES_CREATE, _concat(graph.tables for graph in graphs)),
        (cypher.ROWS_CREATE, _concat(graph.rows for graph in graphs)),
        # Entities in id order: concurrent writers then lock shared entities in the same order.
        (cypher.ENTITIES_MERGE, sorted(_concat(graph.entities for graph in graphs), key=lambda row: row["id"])),
        *(
            (cypher.mentions_create(label), _concat(graph.mentions.get(label, []) for graph in graphs))
            for label in labels
        ),
        (cypher.RELATIONS_MERGE, _concat(graph.relations for graph in graphs)),
        (cypher.TITLE_LINKS_CREATE, sorted(_concat(graph.title_links for graph in graphs), key=_by_entity)),
    ]
    for statement, rows in batches:
        if rows:
            _run(tx, statement, rows=rows)
    _title_links_back(tx, graphs)


def _by_entity(row: Mapping[str, Any]) -> tuple[str, str]:
    return row["entity"], row["unit"]


def _whole_word_at(text: str, name: str) -> int:
    """Where ``name`` occurs in ``text`` as whole words (-1 when it does not)."""
    for match in re.finditer(re.escape(name), text):
        before = text[match.start() - 1] if match.start() else " "
        after = text[match.end()] if match.end() < len(text) else " "
        if not before.isalnum() and not after.isalnum():
            return match.start()
    return -1


def _title_links_back(tx: ManagedTransaction, graphs: Sequence[DocumentRows]) -> None:
    """Chunks already in the graph that name one of these documents' titles mention its entity now
    (the other direction of the title links: a page ingested after the passages that name it)."""
    titles = [title for graph in graphs for title in graph.titles]
    if not titles:
        return
    found = tx.run(
        cypher.TITLE_OCCURRENCES,
        titles=titles,
        limit=TITLE_LINK_LIMIT,
        documents=[graph.document["id"] for graph in graphs],
    )
    rows = []
    for record in found:
        start = _whole_word_at(record["text"], record["name"])
        if start < 0:
            continue
        starts = record["sentence_starts"] or [0]
        rows.append(
            {
                "unit": record["unit"],
                "entity": record["entity"],
                "start": start,
                "end": start + len(record["name"]),
                "sentence": max(0, bisect.bisect_right(starts, start) - 1),
                "document_id": record["document_id"],
            }
        )
    if rows:
        _run(tx, cypher.TITLE_LINKS_CREATE, rows=sorted(rows, key=_by_entity))


def documents_graph_write(*, driver: Driver, graphs: Sequence[DocumentRows], replaces: Sequence[str] = ()) -> list[str]:
    """Remove ``replaces`` (older versions) and create the documents' subgraphs, in one transaction.

    Returns the unit ids (chunks, rows, images) of the removed versions.
    """

    def work(tx: ManagedTransaction) -> list[str]:
        removed = [unit for old_id in replaces for unit in _delete(tx, old_id) or []]
        _write(tx, graphs)
        return removed

    with driver.session(database=settings.NEO4J_DATABASE) as session:
        return session.execute_write(work)


def document_graph_delete(*, driver: Driver, document_id: str) -> list[str] | None:
    """Remove the document and whatever only it supported; return its unit ids (None if it was not there)."""
    with driver.session(database=settings.NEO4J_DATABASE) as session:
        return session.execute_write(_delete, document_id)


def documents_in_graph(*, driver: Driver, document_ids: Sequence[str]) -> set[str]:
    """Which of these documents the graph holds."""
    if not document_ids:
        return set()
    return set(graph_read(driver, cypher.DOCUMENTS_EXISTING, ids=list(document_ids))[0]["ids"])


def entities_with_vectors(*, driver: Driver, ids: Sequence[str]) -> set[str]:
    """Which of these entities have a name vector."""
    if not ids:
        return set()
    return set(graph_read(driver, cypher.ENTITIES_WITH_VECTORS, ids=list(ids))[0]["ids"])


def entities_without_vectors(*, driver: Driver, after: str, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` entities (``id``, ``name``, ``type``) without a name vector, ids after ``after``."""
    return graph_read(driver, cypher.ENTITIES_WITHOUT_VECTORS, after=after, limit=limit)


def entity_vectors_write(*, driver: Driver, rows: Sequence[Mapping[str, Any]]) -> None:
    """Give each entity (``id``, ``vector``) its name vector, unless it has one."""
    graph_write(driver, cypher.ENTITY_VECTORS_SET, rows=list(rows))


def entity_neighbours(
    *, driver: Driver, rows: Sequence[Mapping[str, Any]], k: int, min_score: float
) -> list[dict[str, Any]]:
    """For each row (``id``, ``vector``), the entities among the ``k`` nearest names scoring at
    least ``min_score``: ``source``, ``target``, ``type``, ``score`` records."""
    return graph_read(
        driver,
        cypher.ENTITY_NEIGHBOURS,
        rows=[{"id": row["id"], "vector": row["vector"]} for row in rows],
        k=k,
        min_score=min_score,
    )


def synonym_edges_write(*, driver: Driver, edges: Sequence[Mapping[str, Any]]) -> None:
    """Create the synonym edges (``source``, ``target``, ``score``) that do not exist yet."""
    if edges:
        graph_write(driver, cypher.SYNONYMS_MERGE, rows=list(edges))
