"""The Neo4j graph as JSON lines: every node (labels, properties) and relationship (type, properties).

Written from one read transaction (a consistent snapshot), streamed in pages through the Bolt
driver, so it works against the embedded test Neo4j and a real server alike, without APOC.
Restored by emptying the graph, recreating the schema and loading the lines in UNWIND batches.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from django.conf import settings
from neo4j import Driver, ManagedTransaction

from apps.backup.manifest import BackupError
from apps.graph import cypher
from apps.graph.schema import graph_schema_apply

NODES_FILE = "graph/nodes.jsonl"
RELATIONSHIPS_FILE = "graph/relationships.jsonl"
PAGE = 1000
_PLAIN = (str, int, float, bool)


def _check_value(value: Any, where: str) -> Any:
    if value is None or isinstance(value, _PLAIN):
        return value
    if isinstance(value, list) and all(item is None or isinstance(item, _PLAIN) for item in value):
        return value
    raise BackupError(f"{where} holds a {type(value).__name__} value, which the JSON backup cannot keep")


def _props(props: dict[str, Any], where: str) -> dict[str, Any]:
    return {key: _check_value(value, f"{where}.{key}") for key, value in props.items()}


def graph_counts(*, driver: Driver) -> dict[str, int]:
    records, _, _ = driver.execute_query(cypher.BACKUP_COUNTS, database_=settings.NEO4J_DATABASE)
    return {"nodes": int(records[0]["nodes"]), "relationships": int(records[0]["relationships"])}


def _export(tx: ManagedTransaction, folder: Path) -> dict[str, int]:
    (folder / "graph").mkdir(exist_ok=True)
    counts = {"nodes": 0, "relationships": 0}
    with open(folder / NODES_FILE, "w", encoding="utf-8") as out:
        for record in tx.run(cypher.BACKUP_NODES):
            row = {"key": record["key"], "labels": sorted(record["labels"]), "props": _props(record["props"], "node")}
            out.write(json.dumps(row, sort_keys=True) + "\n")
            counts["nodes"] += 1
    with open(folder / RELATIONSHIPS_FILE, "w", encoding="utf-8") as out:
        for record in tx.run(cypher.BACKUP_RELATIONSHIPS):
            row = {
                "source": record["source"],
                "target": record["target"],
                "type": record["type"],
                "props": _props(record["props"], record["type"]),
            }
            out.write(json.dumps(row, sort_keys=True) + "\n")
            counts["relationships"] += 1
    return counts


def graph_dump(*, driver: Driver, folder: Path) -> dict[str, int]:
    """Write every node and relationship into ``folder``; return their counts."""
    with driver.session(database=settings.NEO4J_DATABASE, fetch_size=PAGE) as session:
        return session.execute_read(_export, folder)


def _lines(path: Path) -> Iterator[list[dict[str, Any]]]:
    with open(path, encoding="utf-8") as handle:
        while batch := [json.loads(line) for line in islice(handle, PAGE)]:
            yield batch


def graph_wipe(*, driver: Driver) -> None:
    """Remove every node and relationship, in batches (the schema stays)."""
    with driver.session(database=settings.NEO4J_DATABASE) as session:
        session.run(cypher.RESTORE_WIPE).consume()


def graph_load(*, driver: Driver, folder: Path) -> dict[str, int]:
    """Empty the graph, recreate its schema and load the backup's nodes and relationships."""
    database = settings.NEO4J_DATABASE
    graph_wipe(driver=driver)
    graph_schema_apply(driver=driver, database=database)
    driver.execute_query(cypher.RESTORE_KEY_INDEX, database_=database)
    driver.execute_query(cypher.RESTORE_KEY_INDEX_AWAIT, database_=database)
    try:
        for batch in _lines(folder / NODES_FILE):
            groups: defaultdict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
            for row in batch:
                groups[tuple(row["labels"])].append({"key": row["key"], "props": row["props"]})
            for labels, rows in groups.items():
                driver.execute_query(cypher.restore_nodes(labels), rows=rows, database_=database)
        for batch in _lines(folder / RELATIONSHIPS_FILE):
            by_type: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
            for row in batch:
                by_type[row["type"]].append({k: row[k] for k in ("source", "target", "props")})
            for rel_type, rows in by_type.items():
                driver.execute_query(cypher.restore_relationships(rel_type), rows=rows, database_=database)
        with driver.session(database=database) as session:
            session.run(cypher.RESTORE_KEY_REMOVE).consume()
    finally:
        driver.execute_query(cypher.RESTORE_KEY_INDEX_DROP, database_=database)
    graph_schema_apply(driver=driver, database=database)
    return graph_counts(driver=driver)
