"""Read-only graph queries."""

from __future__ import annotations

from collections.abc import Sequence

from neo4j import Driver

from apps.graph import cypher
from apps.graph.db import graph_read


def graph_node_counts(*, driver: Driver, collections: Sequence[str] | None = None) -> dict[str, int]:
    """Number of nodes per label (labels with none left out): of the whole graph when ``collections`` is None,
    else of what those collections hold."""
    if collections is None:
        return {record["label"]: record["count"] for record in graph_read(driver, cypher.COUNT_NODES_BY_LABEL)}
    records = graph_read(driver, cypher.COUNT_NODES_IN_COLLECTIONS, collections=list(collections))
    return {label: int(count) for label, count in records[0].items() if count}


def graph_server_info(*, driver: Driver) -> str:
    """The server's product name, version and edition, e.g. ``Neo4j Kernel 5.26.0 community``."""
    records, _, _ = driver.execute_query(cypher.SERVER_INFO, database_="system")
    record = records[0]
    return f"{record['name']} {record['version']} {record['edition']}"
