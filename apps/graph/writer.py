"""Write or delete one document's subgraph, each in a single Neo4j transaction.

A failure anywhere rolls the whole transaction back, so a document is either
fully in the graph or not at all, and no other document is touched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from neo4j import Driver, ManagedTransaction

from apps.graph import cypher

Row = Mapping[str, Any]


def _run(tx: ManagedTransaction, statement: str, **params: Any) -> None:
    tx.run(statement, **params).consume()


def _delete(tx: ManagedTransaction, document_id: str) -> bool:
    record = tx.run(cypher.DOCUMENT_UNIT_IDS, document_id=document_id).single()
    if record is None:
        return False
    units = [unit for unit in record["units"] if unit is not None]
    _run(tx, cypher.DOCUMENT_RELATIONS_RELEASE, document_id=document_id, units=units)
    _run(tx, cypher.DOCUMENT_ENTITIES_RELEASE, document_id=document_id)
    _run(tx, cypher.DOCUMENT_DELETE, document_id=document_id)
    return True


def _write(tx: ManagedTransaction, graph: Any) -> None:
    doc_id = graph.document["id"]
    _run(tx, cypher.DOCUMENT_CREATE, **graph.document)
    batches: Sequence[tuple[str, Sequence[Row]]] = (
        (cypher.CHUNKS_CREATE, graph.chunks),
        (cypher.CHUNKS_LINK_NEXT, graph.next_links),
        (cypher.IMAGES_CREATE, graph.images),
        (cypher.TABLES_CREATE, graph.tables),
        (cypher.ROWS_CREATE, graph.rows),
        (cypher.ENTITIES_MERGE, graph.entities),
        *((cypher.mentions_create(label), rows) for label, rows in graph.mentions.items()),
        (cypher.RELATIONS_MERGE, graph.relations),
    )
    for statement, rows in batches:
        if rows:
            _run(tx, statement, rows=list(rows), document_id=doc_id)


def document_graph_write(*, driver: Driver, graph: Any, replaces: Sequence[str] = ()) -> None:
    """Create the document's subgraph, after removing ``replaces`` (older versions
    of it) and any earlier partial copy under the same id, all in one transaction."""

    def work(tx: ManagedTransaction) -> None:
        for old_id in {*replaces, graph.document["id"]}:
            _delete(tx, old_id)
        _write(tx, graph)

    with driver.session(database=settings.NEO4J_DATABASE) as session:
        session.execute_write(work)


def document_graph_delete(*, driver: Driver, document_id: str) -> bool:
    """Remove the document and whatever only it supported; return whether it existed."""
    with driver.session(database=settings.NEO4J_DATABASE) as session:
        return bool(session.execute_write(_delete, document_id))


def document_graph_exists(*, driver: Driver, document_id: str) -> bool:
    records, _, _ = driver.execute_query(cypher.DOCUMENT_EXISTS, id=document_id, database_=settings.NEO4J_DATABASE)
    return bool(records)
