"""Backup and restore of the whole graph (``apps.backup``, docs/backup.md)."""

from __future__ import annotations

import re

# Everything is read in one read transaction (a consistent snapshot), streamed in pages.
BACKUP_COUNTS = """
CALL () { MATCH (n) RETURN count(n) AS nodes }
CALL () { MATCH ()-[r]->() RETURN count(r) AS relationships }
RETURN nodes, relationships
"""
BACKUP_NODES = "MATCH (n) RETURN elementId(n) AS key, labels(n) AS labels, properties(n) AS props"
BACKUP_RELATIONSHIPS = """
MATCH (a)-[r]->(b)
RETURN elementId(a) AS source, elementId(b) AS target, type(r) AS type, properties(r) AS props
"""
# Restore: empty the graph in batches (the schema stays), then load with a temporary key.
RESTORE_WIPE = "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS"
RESTORE_KEY_INDEX = "CREATE INDEX ragkg_restore_key IF NOT EXISTS FOR (n:RagkgRestore) ON (n.ragkg_restore_key)"
RESTORE_KEY_INDEX_AWAIT = "CALL db.awaitIndex('ragkg_restore_key', 300)"
RESTORE_KEY_INDEX_DROP = "DROP INDEX ragkg_restore_key IF EXISTS"
RESTORE_KEY_REMOVE = """
MATCH (n:RagkgRestore)
CALL (n) { REMOVE n:RagkgRestore REMOVE n.ragkg_restore_key } IN TRANSACTIONS OF 5000 ROWS
"""


# Labels and relationship types a backup may name: plain identifiers (all that ragkg writes).
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def _quoted(name: str) -> str:
    """A plain identifier (``_IDENTIFIER``) as a quoted Cypher label or relationship type."""
    return f"`{name}`"


def restore_nodes(labels: tuple[str, ...]) -> str:
    """Create one batch of nodes with these labels; each row is {key, props}. A label that is not a plain
    identifier (a damaged or hostile backup) raises ValueError."""
    if not all(_IDENTIFIER.fullmatch(label) for label in labels):
        raise ValueError(f"not a node label: {labels!r}")
    names = "".join(f":{_quoted(label)}" for label in (*labels, "RagkgRestore"))
    return f"UNWIND $rows AS row CREATE (n{names}) SET n = row.props, n.ragkg_restore_key = row.key"


def restore_relationships(rel_type: str) -> str:
    """Create one batch of relationships of this type; each row is {source, target, props}. A type that is
    not a plain identifier raises ValueError."""
    if not _IDENTIFIER.fullmatch(rel_type):
        raise ValueError(f"not a relationship type: {rel_type!r}")
    return (
        "UNWIND $rows AS row "
        "MATCH (a:RagkgRestore {ragkg_restore_key: row.source}) "
        "MATCH (b:RagkgRestore {ragkg_restore_key: row.target}) "
        f"CREATE (a)-[r:{_quoted(rel_type)}]->(b) SET r = row.props"
    )
