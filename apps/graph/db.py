"""Running Cypher reads: the configured database, routed to readers, records as dicts.

The graph explorer and the document viewer read through ``graph_read``; the older private wrappers
(curation, ledger) are to move here too.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from neo4j import Driver


def graph_read(driver: Driver, statement: str, **params: Any) -> list[dict[str, Any]]:
    """The records of a read statement on ``NEO4J_DATABASE``, each as a dict."""
    records, _, _ = driver.execute_query(statement, database_=settings.NEO4J_DATABASE, routing_="r", **params)
    return [dict(record) for record in records]
