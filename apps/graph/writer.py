"""Write or delete documents' subgraphs, each call in a single Neo4j transaction.

A failure anywhere rolls the whole transaction back, so the documents of a
call are either fully in the graph or not at all, and no other document is
touched. Callers that need all-or-nothing *per document* retry a failed batch
one document at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from django.conf import settings
from neo4j import Driver, ManagedTransaction

from apps.graph import cypher

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


def _run(tx: ManagedTransaction, statement: str, **params: Any) -> None:
    tx.run(statement, **params).consume()


def _delete(tx: ManagedTransaction, document_id: str) -> list[str] | None:
    """Delete the document; return the ids of its chunks, rows and images (None if it was not there)."""
    record = tx.run(cypher.DOCUMENT_UNIT_IDS, document_id=document_id).single()
    if record is None:
        return None
    units = [unit for unit in record["units"] if unit is not None]
    _run(tx, cypher.DOCUMENT_RELATIONS_RELEASE, document_id=document_id, units=units)
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
    ]
    for statement, rows in batches:
        if rows:
            _run(tx, statement, rows=rows)


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
    records, _, _ = driver.execute_query(
        cypher.DOCUMENTS_EXISTING, ids=list(document_ids), database_=settings.NEO4J_DATABASE
    )
    return set(records[0]["ids"])
