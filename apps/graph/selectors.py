"""Read-only graph queries."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from neo4j import Driver

from apps.graph import cypher


def graph_node_counts(*, driver: Driver, collections: Sequence[str] | None = None) -> dict[str, int]:
    """Number of nodes per label (labels with none left out): of the whole graph when ``collections`` is None,
    else of what those collections hold."""
    if collections is None:
        records, _, _ = driver.execute_query(cypher.COUNT_NODES_BY_LABEL, database_=settings.NEO4J_DATABASE)
        return {record["label"]: record["count"] for record in records}
    records, _, _ = driver.execute_query(
        cypher.COUNT_NODES_IN_COLLECTIONS, {"collections": list(collections)}, database_=settings.NEO4J_DATABASE
    )
    return {label: int(count) for label, count in records[0].data().items() if count}


def graph_server_info(*, driver: Driver) -> str:
    """The server's product name, version and edition, e.g. ``Neo4j Kernel 5.26.0 community``."""
    records, _, _ = driver.execute_query(cypher.SERVER_INFO, database_="system")
    record = records[0]
    return f"{record['name']} {record['version']} {record['edition']}"
