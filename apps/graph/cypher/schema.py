"""The graph app's own statements: the liveness ping, the server's version, the schema (constraints and
indexes, idempotent with ``IF NOT EXISTS`` so they run on every start) and node counts
(``apps.graph.schema``, ``apps.graph.selectors``, ``apps.answers.warm``).
"""

from __future__ import annotations

from apps.graph.cypher.common import RELATION_WEIGHT_SET, UNIT_OF_ID

PING = "RETURN 1 AS ok"

SERVER_INFO = "CALL dbms.components() YIELD name, versions, edition RETURN name, versions[0] AS version, edition"

SHOW_CONSTRAINT_NAMES = "SHOW CONSTRAINTS YIELD name RETURN collect(name) AS names"
SHOW_INDEX_NAMES = "SHOW INDEXES YIELD name RETURN collect(name) AS names"

COUNT_NODES_BY_LABEL = "MATCH (n) UNWIND labels(n) AS label RETURN label, count(*) AS count ORDER BY label"
# The same within $collections: documents, chunks, images and rows carry their collection, a table counts
# with its document, and an entity when a unit of $collections mentions it.
COUNT_NODES_IN_COLLECTIONS = """
CALL () { MATCH (d:Document) WHERE d.collection IN $collections RETURN count(d) AS documents }
CALL () {
  MATCH (d:Document)-[:HAS_TABLE]->(t:Table) WHERE d.collection IN $collections RETURN count(t) AS tables
}
CALL () { MATCH (c:Chunk) WHERE c.collection IN $collections RETURN count(c) AS chunks }
CALL () { MATCH (i:Image) WHERE i.collection IN $collections RETURN count(i) AS images }
CALL () { MATCH (r:Row) WHERE r.collection IN $collections RETURN count(r) AS rows }
CALL () {
  MATCH (u)-[:MENTIONS]->(e:Entity) WHERE u.collection IN $collections RETURN count(DISTINCT e) AS entities
}
RETURN chunks AS Chunk, documents AS Document, entities AS Entity, images AS Image, rows AS Row, tables AS `Table`
"""

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
    # A document's evidence edges, found when it is deleted.
    ("evidence_document", "CREATE INDEX evidence_document IF NOT EXISTS FOR ()-[ev:EVIDENCE]-() ON (ev.document)"),
    (
        "entity_name_fulltext",
        "CREATE FULLTEXT INDEX entity_name_fulltext IF NOT EXISTS FOR (n:Entity) ON EACH [n.name, n.aliases_text]",
    ),
    # Entity names' text embeddings (cosine), for synonym edges and for linking a question's names;
    # no fixed dimension: the names are embedded by whichever text encoder the deployment runs.
    (
        "entity_name_vectors",
        "CREATE VECTOR INDEX entity_name_vectors IF NOT EXISTS FOR (n:Entity) ON (n.name_vector)"
        " OPTIONS {indexConfig: {`vector.similarity_function`: 'cosine'}}",
    ),
    (
        "unit_text_fulltext",
        "CREATE FULLTEXT INDEX unit_text_fulltext IF NOT EXISTS FOR (n:Chunk|Row|Image) ON EACH [n.text]"
        " OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}}",
    ),
    # The text of units written in Chinese, Japanese or Korean (``text_cjk``, set only on those) for
    # questions in those scripts: Lucene's cjk analyzer indexes overlapping character pairs, where the
    # english one sees single characters (apps/answers/lexical.py picks the index by the question's
    # script). A unit without the property is not in this index, so English text costs one index.
    (
        "unit_cjk_fulltext",
        "CREATE FULLTEXT INDEX unit_cjk_fulltext IF NOT EXISTS"
        " FOR (n:Chunk|Row|Image) ON EACH [n.text_cjk] OPTIONS {indexConfig: {`fulltext.analyzer`: 'cjk'}}",
    ),
)

# Chunks, images and rows carry their document's collection (a document's collection is part of
# its identity, so it never changes); graphs written before they did are filled in on schema apply.
UNIT_COLLECTIONS_BACKFILL = (
    """
MATCH (d:Document)-[:HAS_CHUNK|HAS_IMAGE]->(u)
WHERE u.collection IS NULL
SET u.collection = d.collection
RETURN count(u) AS filled
""",
    """
MATCH (d:Document)-[:HAS_TABLE]->(:Table)-[:HAS_ROW]->(u:Row)
WHERE u.collection IS NULL
SET u.collection = d.collection
RETURN count(u) AS filled
""",
)

# Older graphs: the first cjk index spanned every unit ([text, language]) and so indexed English text
# twice; it is dropped, and Chinese, Japanese and Korean chunks get the property the new one reads.
RETIRED_INDEXES = ("unit_text_cjk_fulltext",)
DROP_INDEX = "DROP INDEX {name} IF EXISTS"
CJK_TEXT_BACKFILL = """
MATCH (c:Chunk)
WHERE c.language IN ['zh', 'ja', 'ko'] AND c.text_cjk IS NULL
SET c.text_cjk = c.text
RETURN count(c) AS filled
"""

# Graphs written while support was kept in list properties (an entity's and a relation's documents, a
# relation's evidence units) are converted on schema apply, a page of $limit at a time: each relation's
# units become its EVIDENCE edges (one per document), the lists go, in one transaction per page (so no
# relation is half converted, and its edges are created, not merged).
SUPPORT_LISTS_CONVERT = (
    """
MATCH (a:Entity)-[r:RELATED]->(b:Entity)
WHERE r.evidence IS NOT NULL OR r.documents IS NOT NULL
WITH a, r, b LIMIT $limit
CALL (a, r, b) {
  UNWIND coalesce(r.evidence, []) AS unit_id
  CALL (unit_id) {"""
    + UNIT_OF_ID
    + """  }
  WITH a, r, b, u.document_id AS document, u.collection AS collection, collect(DISTINCT u.id) AS units
  CREATE (a)-[:EVIDENCE {predicate: r.predicate, document: document, collection: collection, units: units}]->(b)
}
REMOVE r.evidence, r.documents
WITH a, r, b
"""
    + RELATION_WEIGHT_SET
    + """
RETURN count(r) AS converted
"""
)

ENTITY_DOCUMENTS_REMOVE = """
MATCH (e:Entity) WHERE e.documents IS NOT NULL
WITH e LIMIT $limit
REMOVE e.documents
RETURN count(e) AS converted
"""
