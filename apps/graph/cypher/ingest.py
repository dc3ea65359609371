"""Ingestion's writes (``apps.graph.writer``): the subgraphs of a batch of documents in one transaction,
entity name vectors and synonym edges, and the deletion of a document with exactly what only it supported.
"""

from __future__ import annotations

from apps.graph.cypher.common import RELATION_SUPPORTED

# Every statement takes a batch ($rows, each row naming its document), so a batch of documents
# costs a fixed number of round trips.

DOCUMENTS_EXISTING = "UNWIND $ids AS id MATCH (d:Document {id: id}) RETURN collect(d.id) AS ids"

DOCUMENTS_CREATE = """
UNWIND $rows AS row
CREATE (d:Document {id: row.id})
SET d.title = row.title, d.path = row.path, d.mime = row.mime, d.sha256 = row.sha256,
    d.collection = row.collection, d.size = row.size,
    d.page_starts = row.page_starts, d.page_numbers = row.page_numbers, d.page_images = row.page_images,
    d.page_widths = row.page_widths, d.page_heights = row.page_heights, d.language = row.language
"""

CHUNKS_CREATE = """
UNWIND $rows AS row
MATCH (d:Document {id: row.document_id})
CREATE (d)-[:HAS_CHUNK]->(c:Chunk {id: row.id})
SET c.text = row.text, c.ord = row.ord, c.sha256 = row.sha256, c.start = row.start, c.end = row.end,
    c.page = row.page, c.sentence_starts = row.sentence_starts, c.sentence_ends = row.sentence_ends,
    c.document_id = row.document_id, c.collection = row.collection, c.language = row.language,
    c.text_cjk = row.text_cjk
"""

CHUNKS_LINK_NEXT = """
UNWIND $rows AS row
MATCH (a:Chunk {id: row.source}), (b:Chunk {id: row.target})
CREATE (a)-[:NEXT]->(b)
"""

IMAGES_CREATE = """
UNWIND $rows AS row
MATCH (d:Document {id: row.document_id})
CREATE (d)-[:HAS_IMAGE]->(i:Image {id: row.id})
SET i.path = row.path, i.thumbnail = row.thumbnail, i.sha256 = row.sha256, i.width = row.width,
    i.height = row.height, i.format = row.format, i.page = row.page, i.name = row.name,
    i.text = row.text, i.labels = row.labels, i.label_scores = row.label_scores, i.ocr_text = row.ocr_text,
    i.document_id = row.document_id, i.collection = row.collection, i.text_cjk = row.text_cjk
"""

TABLES_CREATE = """
UNWIND $rows AS row
MATCH (d:Document {id: row.document_id})
CREATE (d)-[:HAS_TABLE]->(t:Table {id: row.id})
SET t.name = row.name, t.columns = row.columns, t.row_count = row.row_count, t.document_id = row.document_id
"""

ROWS_CREATE = """
UNWIND $rows AS row
MATCH (t:Table {id: row.table_id})
CREATE (t)-[:HAS_ROW]->(r:Row {id: row.id})
SET r.idx = row.idx, r.cells = row.cells, r.text = row.text, r.document_id = row.document_id,
    r.collection = row.collection, r.text_cjk = row.text_cjk
"""

ENTITIES_MERGE = """
UNWIND $rows AS row
MERGE (e:Entity {id: row.id})
ON CREATE SET e.name = row.name, e.type = row.type, e.aliases = []
SET e.aliases = e.aliases + [a IN row.aliases WHERE NOT a IN e.aliases]
SET e.aliases_text = reduce(s = e.name, a IN e.aliases | s + ' ' + a)
"""

# Which of these entities already have a name vector (their names need no embedding).
ENTITIES_WITH_VECTORS = """
UNWIND $ids AS id
MATCH (e:Entity {id: id}) WHERE e.name_vector IS NOT NULL
RETURN collect(e.id) AS ids
"""

# A page of the entities without a name vector (written before names had vectors), in id order.
ENTITIES_WITHOUT_VECTORS = """
MATCH (e:Entity) WHERE e.name_vector IS NULL AND e.id > $after
RETURN e.id AS id, e.name AS name, e.type AS type
ORDER BY e.id LIMIT $limit
"""

ENTITY_VECTORS_SET = """
UNWIND $rows AS row
MATCH (e:Entity {id: row.id}) WHERE e.name_vector IS NULL
CALL db.create.setNodeVectorProperty(e, 'name_vector', row.vector)
"""

# The entities already in the graph whose names' embeddings are nearest each new entity's name.
ENTITY_NEIGHBOURS = """
UNWIND $rows AS row
CALL db.index.vector.queryNodes('entity_name_vectors', $k, row.vector) YIELD node, score
WITH row, node, score WHERE node.id <> row.id AND score >= $min_score
RETURN row.id AS source, node.id AS target, node.type AS type, score
"""

# Synonym edges: scored suggestions that two entities are one, from the names' embeddings (one
# edge per pair, from the smaller id); curators confirm or reject them, and only a merge joins the
# entities. The expansion crosses them like RELATED edges; a rejected one is never crossed.
SYNONYMS_MERGE = """
UNWIND $rows AS row
MATCH (a:Entity {id: row.source})
MATCH (b:Entity {id: row.target})
MERGE (a)-[s:SYNONYM]->(b)
ON CREATE SET s.score = row.score, s.status = 'suggested'
"""

MENTION_SOURCE_LABELS = ("Chunk", "Row", "Image")


def mentions_create(label: str) -> str:
    """MENTIONS edges from units of one label (a fixed label keeps the id lookup indexed)."""
    if label not in MENTION_SOURCE_LABELS:
        raise ValueError(f"not a mention source label: {label!r}")
    return f"""
UNWIND $rows AS row
MATCH (u:{label} {{id: row.unit}})
MATCH (e:Entity {{id: row.entity}})
CREATE (u)-[:MENTIONS {{start: row.start, end: row.end, sentence: row.sentence}}]->(e)
"""


# A relation is one RELATED edge (predicate, weight: its evidence units, status) and, beside it, one
# EVIDENCE edge per supporting document (predicate, document, collection, that document's units):
# adding or removing a document touches its own edge, never a list that grows with the corpus. The
# evidence edge is created, not merged: a document is new when it is written (its id is its content's,
# a replaced version is deleted first) and each of its rows names one relation once, so nothing has to
# scan the other documents' edges between the two entities.
RELATIONS_MERGE = """
UNWIND $rows AS row
MATCH (a:Entity {id: row.source}), (b:Entity {id: row.target})
MERGE (a)-[r:RELATED {predicate: row.predicate}]->(b)
CREATE (a)-[:EVIDENCE {predicate: row.predicate, document: row.document_id, collection: row.collection,
                       units: row.evidence}]->(b)
SET r.weight = coalesce(r.weight, 0) + size(row.evidence)
"""

# Title links: a chunk span that names a title entity (apps.ingest.graph_build.title_links) becomes
# a mention of it (a deleted document takes its links away).
TITLE_LINKS_CREATE = """
UNWIND $rows AS row
MATCH (e:Entity {id: row.entity})
MATCH (u:Chunk {id: row.unit})
WHERE NOT (u)-[:MENTIONS]->(e)
CREATE (u)-[:MENTIONS {start: row.start, end: row.end, sentence: row.sentence, linked: true}]->(e)
"""

# The chunks already in the graph (outside $documents) whose text holds a new title's name: the
# full-text index narrows them to $limit per title, the exact name (case and all) decides.
TITLE_OCCURRENCES = """
UNWIND $titles AS title
CALL db.index.fulltext.queryNodes('unit_text_fulltext', title.query, {limit: $limit}) YIELD node
WITH title, node
WHERE node:Chunk AND NOT node.document_id IN $documents AND node.text CONTAINS title.name
RETURN title.id AS entity, title.name AS name, node.id AS unit, node.text AS text,
       node.sentence_starts AS sentence_starts, node.document_id AS document_id
"""

# --- deletion: remove a document and exactly what only it supported ---------------------

DOCUMENT_UNIT_IDS = """
MATCH (d:Document {id: $document_id})
OPTIONAL MATCH (d)-[:HAS_CHUNK|HAS_IMAGE]->(u)
OPTIONAL MATCH (d)-[:HAS_TABLE]->(:Table)-[:HAS_ROW]->(r:Row)
RETURN d.id AS id, collect(DISTINCT u.id) + collect(DISTINCT r.id) AS units
"""

# The document's EVIDENCE edges go (found through their index), each relation loses its units from
# the weight, and a relation no other document supports goes with them.
DOCUMENT_RELATIONS_RELEASE = (
    """
MATCH (a:Entity)-[ev:EVIDENCE {document: $document_id}]->(b:Entity)
MATCH (a)-[r:RELATED {predicate: ev.predicate}]->(b)
WITH a, r, b, ev, size(ev.units) AS units
DELETE ev
WITH a, r, b, sum(units) AS units
SET r.weight = r.weight - units
WITH a, r, b
WHERE NOT """
    + RELATION_SUPPORTED
    + """
DELETE r
"""
)

# An entity goes when no unit of another document mentions it (its mentions are its support).
DOCUMENT_ENTITIES_RELEASE = """
MATCH (d:Document {id: $document_id})
MATCH (d)-[:HAS_CHUNK|HAS_IMAGE|HAS_TABLE|HAS_ROW*1..2]->()-[:MENTIONS]->(e:Entity)
WITH DISTINCT e
WHERE NOT EXISTS { MATCH (u)-[:MENTIONS]->(e) WHERE u.document_id <> $document_id }
DETACH DELETE e
"""

DOCUMENT_DELETE = """
MATCH (d:Document {id: $document_id})
OPTIONAL MATCH (d)-[:HAS_CHUNK|HAS_IMAGE|HAS_TABLE|HAS_ROW*1..2]->(part)
WITH d, collect(DISTINCT part) AS parts
FOREACH (p IN parts | DETACH DELETE p)
DETACH DELETE d
"""
