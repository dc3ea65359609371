"""Running Cypher: the configured database (``NEO4J_DATABASE``), reads routed to readers and writes to
the leader, records as dicts. Curation, the change log's graph side, the graph explorer, the document
viewer and the answer pages' extras read and write through ``graph_read`` and ``graph_write``; the
answer path's hot reads use ``apps.graph.driver.graph_read`` (auto-commit, with a timeout).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from neo4j import Driver


def graph_read(driver: Driver, statement: str, **params: Any) -> list[dict[str, Any]]:
    """The records of a read statement on ``NEO4J_DATABASE``, each as a dict."""
    records, _, _ = driver.execute_query(statement, database_=settings.NEO4J_DATABASE, routing_="r", **params)
    return [dict(record) for record in records]


def graph_write(driver: Driver, statement: str, **params: Any) -> list[dict[str, Any]]:
    """The records of a write statement on ``NEO4J_DATABASE`` (one managed transaction), each as a dict."""
    records, _, _ = driver.execute_query(statement, database_=settings.NEO4J_DATABASE, routing_="w", **params)
    return [dict(record) for record in records]
