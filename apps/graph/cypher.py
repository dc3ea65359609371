"""Every Cypher statement ragkg sends, as named constants.

Statements are always parameterised; schema statements are idempotent
(``IF NOT EXISTS``) so they can run on every start.
"""

from __future__ import annotations

PING = "RETURN 1 AS ok"

SERVER_INFO = "CALL dbms.components() YIELD name, versions, edition RETURN name, versions[0] AS version, edition"

SHOW_CONSTRAINT_NAMES = "SHOW CONSTRAINTS YIELD name RETURN collect(name) AS names"
SHOW_INDEX_NAMES = "SHOW INDEXES YIELD name RETURN collect(name) AS names"

COUNT_NODES_BY_LABEL = "MATCH (n) UNWIND labels(n) AS label RETURN label, count(*) AS count ORDER BY label"

# (name, statement) pairs, applied in order by apps.graph.schema.graph_schema_apply.
SCHEMA_CONSTRAINTS: tuple[tuple[str, str], ...] = tuple(
    (
        f"{label.lower()}_id_unique",
        f"CREATE CONSTRAINT {label.lower()}_id_unique IF NOT EXISTS FOR (n:{label}) REQUIRE n.id IS UNIQUE",
    )
    for label in ("Document", "Chunk", "Image", "Table", "Row", "Entity")
)

SCHEMA_INDEXES: tuple[tuple[str, str], ...] = (
    ("document_collection", "CREATE INDEX document_collection IF NOT EXISTS FOR (n:Document) ON (n.collection)"),
    ("document_sha256", "CREATE INDEX document_sha256 IF NOT EXISTS FOR (n:Document) ON (n.sha256)"),
    ("chunk_sha256", "CREATE INDEX chunk_sha256 IF NOT EXISTS FOR (n:Chunk) ON (n.sha256)"),
    ("image_sha256", "CREATE INDEX image_sha256 IF NOT EXISTS FOR (n:Image) ON (n.sha256)"),
    ("entity_name", "CREATE INDEX entity_name IF NOT EXISTS FOR (n:Entity) ON (n.name)"),
    ("entity_type", "CREATE INDEX entity_type IF NOT EXISTS FOR (n:Entity) ON (n.type)"),
    (
        "entity_name_fulltext",
        "CREATE FULLTEXT INDEX entity_name_fulltext IF NOT EXISTS FOR (n:Entity) ON EACH [n.name, n.aliases_text]",
    ),
)
