"""The change log's view of the graph (``apps.ledger.graph``): what a document version holds, read back
so it can be hashed as the log hashed it.
"""

from __future__ import annotations

# What a document version holds, read back so it can be hashed as the log hashed it.

DOCUMENT_IDS_PAGE = "MATCH (d:Document) WHERE d.id > $after RETURN d.id AS id ORDER BY d.id LIMIT $limit"

DOCUMENT_CONTENTS = """
UNWIND $ids AS id
MATCH (d:Document {id: id})
CALL (d) { OPTIONAL MATCH (d)-[:HAS_CHUNK]->(c:Chunk) RETURN collect([c.id, c.text]) AS chunks }
CALL (d) { OPTIONAL MATCH (d)-[:HAS_IMAGE]->(i:Image) RETURN collect([i.id, i.sha256]) AS images }
CALL (d) { OPTIONAL MATCH (d)-[:HAS_TABLE]->(:Table)-[:HAS_ROW]->(r:Row) RETURN collect([r.id, r.text]) AS rows }
RETURN d {.id, .collection, .path, .title, .mime, .sha256, .size} AS document, chunks, images, rows
"""

ENTITIES_READ = "UNWIND $ids AS id MATCH (e:Entity {id: id}) RETURN e.id AS id, e.name AS name, e.type AS type"

RELATIONS_READ = """
UNWIND $rows AS row
MATCH (:Entity {id: row.source})-[r:RELATED {predicate: row.predicate}]->(:Entity {id: row.target})
RETURN row.source AS source, row.predicate AS predicate, row.target AS target, coalesce(r.status, 'proposed') AS status
"""

SYNONYMS_READ = """
UNWIND $rows AS row
MATCH (:Entity {id: row.source})-[s:SYNONYM]->(:Entity {id: row.target})
RETURN row.source AS source, row.target AS target, s.status AS status
"""
