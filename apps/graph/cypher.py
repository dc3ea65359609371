"""Every Cypher statement ragkg sends, as named constants.

Statements are always parameterised; schema statements are idempotent
(``IF NOT EXISTS``) so they can run on every start.
"""

from __future__ import annotations

import re

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

# --- ingestion: the subgraphs of a batch of documents, written in one transaction -------
# Every statement takes a batch ($rows, each row naming its document), so a batch of documents
# costs a fixed number of round trips.

DOCUMENTS_EXISTING = "UNWIND $ids AS id MATCH (d:Document {id: id}) RETURN collect(d.id) AS ids"

DOCUMENTS_CREATE = """
UNWIND $rows AS row
CREATE (d:Document {id: row.id})
SET d.title = row.title, d.path = row.path, d.mime = row.mime, d.sha256 = row.sha256,
    d.collection = row.collection, d.size = row.size,
    d.page_starts = row.page_starts, d.page_numbers = row.page_numbers, d.page_images = row.page_images,
    d.page_widths = row.page_widths, d.page_heights = row.page_heights
"""

CHUNKS_CREATE = """
UNWIND $rows AS row
MATCH (d:Document {id: row.document_id})
CREATE (d)-[:HAS_CHUNK]->(c:Chunk {id: row.id})
SET c.text = row.text, c.ord = row.ord, c.sha256 = row.sha256, c.start = row.start, c.end = row.end,
    c.page = row.page, c.sentence_starts = row.sentence_starts, c.sentence_ends = row.sentence_ends,
    c.document_id = row.document_id, c.collection = row.collection
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
    i.document_id = row.document_id, i.collection = row.collection
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
    r.collection = row.collection
"""

ENTITIES_MERGE = """
UNWIND $rows AS row
MERGE (e:Entity {id: row.id})
ON CREATE SET e.name = row.name, e.type = row.type, e.aliases = [], e.documents = []
SET e.aliases = e.aliases + [a IN row.aliases WHERE NOT a IN e.aliases],
    e.documents = CASE WHEN row.document_id IN e.documents THEN e.documents ELSE e.documents + row.document_id END
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


RELATIONS_MERGE = """
UNWIND $rows AS row
MATCH (a:Entity {id: row.source}), (b:Entity {id: row.target})
MERGE (a)-[r:RELATED {predicate: row.predicate}]->(b)
ON CREATE SET r.evidence = [], r.documents = []
SET r.evidence = r.evidence + [x IN row.evidence WHERE NOT x IN r.evidence],
    r.documents = CASE WHEN row.document_id IN r.documents THEN r.documents ELSE r.documents + row.document_id END
SET r.weight = size(r.evidence)
"""

# Title links: a chunk span that names a title entity (apps.ingest.graph_build.title_links) becomes
# a mention of it, and the chunk's document a contributor (a deleted document takes its links away).
TITLE_LINKS_CREATE = """
UNWIND $rows AS row
MATCH (e:Entity {id: row.entity})
MATCH (u:Chunk {id: row.unit})
WHERE NOT (u)-[:MENTIONS]->(e)
CREATE (u)-[:MENTIONS {start: row.start, end: row.end, sentence: row.sentence, linked: true}]->(e)
SET e.documents = CASE WHEN row.document_id IN e.documents THEN e.documents ELSE e.documents + row.document_id END
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

DOCUMENT_RELATIONS_RELEASE = """
MATCH (d:Document {id: $document_id})
MATCH (d)-[:HAS_CHUNK|HAS_IMAGE|HAS_TABLE|HAS_ROW*1..2]->()-[:MENTIONS]->(e:Entity)
WITH DISTINCT e
MATCH (e)-[r:RELATED]-()
WHERE $document_id IN r.documents
WITH DISTINCT r
SET r.documents = [x IN r.documents WHERE x <> $document_id],
    r.evidence = [x IN r.evidence WHERE NOT x IN $units]
SET r.weight = size(r.evidence)
WITH r WHERE size(r.documents) = 0
DELETE r
"""

DOCUMENT_ENTITIES_RELEASE = """
MATCH (d:Document {id: $document_id})
MATCH (d)-[:HAS_CHUNK|HAS_IMAGE|HAS_TABLE|HAS_ROW*1..2]->()-[:MENTIONS]->(e:Entity)
WITH DISTINCT e
SET e.documents = [x IN e.documents WHERE x <> $document_id]
WITH e WHERE size(e.documents) = 0
DETACH DELETE e
"""

DOCUMENT_DELETE = """
MATCH (d:Document {id: $document_id})
OPTIONAL MATCH (d)-[:HAS_CHUNK|HAS_IMAGE|HAS_TABLE|HAS_ROW*1..2]->(part)
WITH d, collect(DISTINCT part) AS parts
FOREACH (p IN parts | DETACH DELETE p)
DETACH DELETE d
"""


# --- the change log's view of the graph (apps.ledger) ------------------------------------
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

# --- curation: each statement applies one logged change, and applying it twice changes nothing -----

SYNONYM_STATUS_SET = """
MATCH (:Entity {id: $source})-[s:SYNONYM]->(:Entity {id: $target})
SET s.status = $status
RETURN count(s) AS updated
"""

ENTITY_RENAME = """
MATCH (e:Entity {id: $id})
SET e.aliases = CASE WHEN e.name = $name OR e.name IN e.aliases THEN e.aliases ELSE e.aliases + e.name END
SET e.name = $name
SET e.aliases = [a IN e.aliases WHERE a <> $name]
SET e.aliases_text = reduce(s = e.name, a IN e.aliases | s + ' ' + a)
RETURN e.id AS id
"""

# Mentions and relations of $drop move to $keep; its names become aliases of $keep; $drop goes.
# A relation keeps its direction: $drop's end of it becomes $keep.
ENTITY_MERGE = """
MATCH (keep:Entity {id: $keep}), (drop:Entity {id: $drop})
WHERE keep <> drop
CALL (keep, drop) {
  MATCH (u)-[m:MENTIONS]->(drop)
  CREATE (u)-[:MENTIONS {start: m.start, end: m.end, sentence: m.sentence}]->(keep)
  DELETE m
}
CALL (keep, drop) {
  MATCH (drop)-[r:RELATED]-(other) WHERE other <> keep
  WITH r, CASE WHEN startNode(r) = drop THEN [keep, other] ELSE [other, keep] END AS ends
  WITH r, ends[0] AS source, ends[1] AS target
  MERGE (source)-[n:RELATED {predicate: r.predicate}]->(target)
  ON CREATE SET n.evidence = [], n.documents = []
  SET n.evidence = n.evidence + [x IN r.evidence WHERE NOT x IN n.evidence],
      n.documents = n.documents + [x IN r.documents WHERE NOT x IN n.documents],
      n.status = coalesce(n.status, r.status)
  SET n.weight = size(n.evidence)
}
SET keep.aliases = keep.aliases + [a IN [drop.name] + drop.aliases WHERE a <> keep.name AND NOT a IN keep.aliases],
    keep.documents = keep.documents + [x IN drop.documents WHERE NOT x IN keep.documents]
SET keep.aliases_text = reduce(s = keep.name, a IN keep.aliases | s + ' ' + a)
DETACH DELETE drop
RETURN keep.id AS id
"""

# What undoing a merge of $drop into $keep needs, read just before the merge: $drop's properties,
# mentions (with the unit's label), relations (with what the merge adds to $keep's counterpart, or
# that it creates one) and synonym edges, and $keep's names and documents.
ENTITY_MERGE_SNAPSHOT = """
MATCH (keep:Entity {id: $keep}), (drop:Entity {id: $drop})
RETURN properties(drop) AS properties, keep.name AS keep_name, keep.aliases AS keep_aliases,
       keep.documents AS keep_documents,
       COLLECT {
         MATCH (u)-[m:MENTIONS]->(drop)
         RETURN {label: [l IN labels(u) WHERE l IN ['Chunk', 'Row', 'Image']][0], unit: u.id,
                 properties: properties(m)}
       } AS mentions,
       COLLECT {
         MATCH (drop)-[r:RELATED]-(other)
         WITH r, other, startNode(r) = drop AS outgoing
         OPTIONAL MATCH (keep)-[f:RELATED {predicate: r.predicate}]->(other) WHERE outgoing AND other <> keep
         OPTIONAL MATCH (other)-[b:RELATED {predicate: r.predicate}]->(keep) WHERE NOT outgoing AND other <> keep
         WITH r, other, outgoing, coalesce(f, b) AS n
         RETURN {other: other.id, outgoing: outgoing, properties: properties(r), created: n IS NULL,
                 status: n.status, added_evidence: [x IN r.evidence WHERE NOT x IN coalesce(n.evidence, [])],
                 added_documents: [x IN r.documents WHERE NOT x IN coalesce(n.documents, [])]}
       } AS relations,
       COLLECT {
         MATCH (drop)-[s:SYNONYM]-(other)
         RETURN {other: other.id, outgoing: startNode(s) = drop, properties: properties(s)}
       } AS synonyms
"""

# Undo a merge from its snapshot: $drop comes back with its properties, name vector, mentions,
# relations and synonym edges; what the merge added to $keep (names, documents, relation evidence,
# relations it created) goes. What $keep gained since from elsewhere stays. Idempotent.
ENTITY_UNMERGE = """
MATCH (keep:Entity {id: $keep})
MERGE (drop:Entity {id: $drop})
WITH keep, drop, coalesce(drop.documents, []) AS had_documents, coalesce(drop.aliases, []) AS had_aliases
SET drop += $properties
SET drop.documents = had_documents + [x IN $properties.documents WHERE NOT x IN had_documents],
    drop.aliases = had_aliases + [a IN $properties.aliases WHERE NOT a IN had_aliases]
SET drop.aliases_text = reduce(s = drop.name, a IN drop.aliases | s + ' ' + a)
SET keep.aliases = [a IN keep.aliases WHERE NOT a IN $keep_aliases_added],
    keep.documents = [x IN keep.documents WHERE NOT x IN $keep_documents_added]
SET keep.aliases_text = reduce(s = keep.name, a IN keep.aliases | s + ' ' + a)
WITH keep, drop
CALL (drop) {
  WITH drop WHERE $vector IS NOT NULL AND drop.name_vector IS NULL
  CALL db.create.setNodeVectorProperty(drop, 'name_vector', $vector)
}
CALL (keep, drop) {
  CALL () {
    UNWIND $mentions.Chunk AS m
    MATCH (u:Chunk {id: m.unit})
    RETURN u, m
    UNION
    UNWIND $mentions.Row AS m
    MATCH (u:Row {id: m.unit})
    RETURN u, m
    UNION
    UNWIND $mentions.Image AS m
    MATCH (u:Image {id: m.unit})
    RETURN u, m
  }
  CALL (u, m, keep) {
    MATCH (u)-[k:MENTIONS {start: m.properties.start, end: m.properties.end}]->(keep)
    WITH k LIMIT 1
    DELETE k
  }
  CALL (u, m, drop) {
    WITH u, m, drop WHERE NOT EXISTS { (u)-[:MENTIONS {start: m.properties.start, end: m.properties.end}]->(drop) }
    CREATE (u)-[k:MENTIONS]->(drop)
    SET k = m.properties
  }
}
CALL (keep, drop) {
  UNWIND $relations AS rel
  MATCH (other:Entity {id: rel.other})
  CALL (drop, other, rel) {
    WITH rel, CASE WHEN rel.outgoing THEN [drop, other] ELSE [other, drop] END AS ends
    WITH rel, ends[0] AS source, ends[1] AS target
    MERGE (source)-[r:RELATED {predicate: rel.properties.predicate}]->(target)
    SET r += rel.properties
  }
  CALL (keep, other, rel) {
    WITH keep, other, rel WHERE other <> keep
    WITH rel, CASE WHEN rel.outgoing THEN [keep, other] ELSE [other, keep] END AS ends
    WITH rel, ends[0] AS source, ends[1] AS target
    MATCH (source)-[n:RELATED {predicate: rel.properties.predicate}]->(target)
    SET n.evidence = [x IN n.evidence WHERE NOT x IN rel.added_evidence],
        n.documents = [x IN n.documents WHERE NOT x IN rel.added_documents],
        n.status = CASE WHEN rel.created THEN n.status ELSE rel.status END
    SET n.weight = size(n.evidence)
    WITH n, rel WHERE rel.created AND size(n.evidence) = 0
    DELETE n
  }
}
CALL (drop) {
  UNWIND $synonyms AS syn
  MATCH (other:Entity {id: syn.other})
  WITH syn, CASE WHEN syn.outgoing THEN [drop, other] ELSE [other, drop] END AS ends
  WITH syn, ends[0] AS source, ends[1] AS target
  MERGE (source)-[s:SYNONYM]->(target)
  SET s += syn.properties
}
RETURN drop.id AS id
"""

ENTITY_DELETE = "MATCH (e:Entity {id: $id}) DETACH DELETE e RETURN count(*) AS deleted"

RELATION_STATUS_SET = """
MATCH (:Entity {id: $source})-[r:RELATED {predicate: $predicate}]->(:Entity {id: $target})
SET r.status = $status
RETURN count(r) AS updated
"""

RELATION_DELETE = """
MATCH (:Entity {id: $source})-[r:RELATED {predicate: $predicate}]->(:Entity {id: $target})
DELETE r
RETURN count(*) AS deleted
"""

# --- vectors: the graph nodes that carry FAISS vectors (apps.vectors) -------------------
# Each unit label is read with its document's collection and the property that is embedded
# (text for the text space, the stored file's path for the CLIP space). Pages are walked in
# id order from $after (keyset pagination on the id constraint's index); OPTIONAL MATCH keeps
# an orphaned unit in its page so the cursor always advances.

VECTOR_UNIT_PATHS = {
    "Chunk": "(d:Document)-[:HAS_CHUNK]->(u)",
    "Row": "(d:Document)-[:HAS_TABLE]->(:Table)-[:HAS_ROW]->(u)",
    "Image": "(d:Document)-[:HAS_IMAGE]->(u)",
}
VECTOR_UNIT_PROPERTIES = ("text", "path")


def _vector_unit_parts(label: str, prop: str) -> str:
    if label not in VECTOR_UNIT_PATHS or prop not in VECTOR_UNIT_PROPERTIES:
        raise ValueError(f"not a vector unit: {label!r}.{prop}")
    return VECTOR_UNIT_PATHS[label]


def vector_units_page(label: str, prop: str, *, with_content: bool) -> str:
    """One page of ``label`` nodes whose ``prop`` is set: id, collection (and the content), ordered by id."""
    path = _vector_unit_parts(label, prop)
    content = f", u.{prop} AS content" if with_content else ""
    return f"""
MATCH (u:{label})
WHERE u.id > $after AND u.{prop} IS NOT NULL AND u.{prop} <> ''
WITH u ORDER BY u.id LIMIT $limit
OPTIONAL MATCH {path}
RETURN u.id AS id, d.collection AS collection{content}
"""


def vector_units_by_id(label: str, prop: str) -> str:
    """The ``label`` nodes among $ids whose ``prop`` is set, with collection and content."""
    path = _vector_unit_parts(label, prop)
    return f"""
UNWIND $ids AS id
MATCH (u:{label} {{id: id}})
WHERE u.{prop} IS NOT NULL AND u.{prop} <> ''
OPTIONAL MATCH {path}
RETURN u.id AS id, d.collection AS collection, u.{prop} AS content
"""


# Neo4j's own vector index, measured side by side with FAISS by benchmarks/vector_search.py on
# throw-away :BenchVector nodes (a private benchmark database only). Vectors travel as
# comma-separated text parsed by the server: the pure-Python driver packs a list of floats
# several times slower than Neo4j parses it, which would slow Neo4j's side unfairly.
VECTOR_BENCH_INDEX = "bench_vectors"


def vector_bench_index_create(dimensions: int) -> str:
    """The benchmark's cosine vector index (index options take no parameters, hence the builder)."""
    if not 0 < int(dimensions) <= 4096:
        raise ValueError(f"unsupported vector dimension: {dimensions!r}")
    return f"""
CREATE VECTOR INDEX {VECTOR_BENCH_INDEX} IF NOT EXISTS FOR (n:BenchVector) ON (n.embedding)
OPTIONS {{indexConfig: {{`vector.dimensions`: {int(dimensions)}, `vector.similarity_function`: 'cosine'}}}}
"""


VECTOR_BENCH_NODES_CREATE = """
UNWIND $rows AS row
CREATE (n:BenchVector {vid: row.vid})
SET n.embedding = [x IN split(row.csv, ',') | toFloat(x)]
"""

VECTOR_BENCH_INDEX_AWAIT = "CALL db.awaitIndex($name, $seconds)"

VECTOR_BENCH_NODES_DELETE = "MATCH (n:BenchVector) WITH n LIMIT $limit DETACH DELETE n RETURN count(*) AS deleted"

VECTOR_BENCH_INDEX_DROP = f"DROP INDEX {VECTOR_BENCH_INDEX} IF EXISTS"

VECTOR_BENCH_QUERY = """
UNWIND range(0, size($vectors) - 1) AS i
CALL (i) {
  WITH [x IN split($vectors[i], ',') | toFloat(x)] AS vector
  CALL db.index.vector.queryNodes($name, $k, vector) YIELD node, score
  RETURN collect(node.vid) AS vids
}
RETURN i, vids ORDER BY i
"""


# --- answering: multi-hop expansion from the seeds, then the chosen units' details --------
# One statement expands every seed (apps.answers.expansion): seed units -> their entities
# (MENTIONS), question entities, each distinct entity once from its best start, optionally on
# over RELATED, or over a SYNONYM edge scoring at least $synonym_min_score (a strength of that
# score), to a neighbour, then to the units mentioning it (MENTIONS); seed chunks also
# reach their NEXT neighbours. Every fan-out is bounded ($fanout; entities mentioned more than
# $max_degree times are hubs and are not crossed). $collections is the access predicate (null:
# every collection, [] nothing): a seed outside it starts nothing, a RELATED edge is crossed only
# when a document of $collections supports it, and a unit outside it is never returned. Each row
# is one group of paths: start (seed unit id, or null for a question entity), entity, optional
# related entity (with the step's type), and the units reached that way with their labels and the first sentence of each
# that mentions the entity. Units that name the entity in their first sentence (the ones about it)
# come first: up to $fanout of them as the store lists them, a scan that stops once it has them
# (a hub's thousands of mentions are not all read); only when there are fewer than $fanout do the
# other units follow, by their first mentioning sentence (ties by element id: no property read).
# A NEXT row has a null entity and null labels and sentences. Lists instead of a row per path: the
# driver decodes a few dozen records instead of several hundred.

ANSWER_EXPAND = """
CALL () {
  UNWIND $seeds AS seed
  CALL (seed) {
    MATCH (u:Chunk {id: seed.id}) RETURN u
    UNION
    MATCH (u:Row {id: seed.id}) RETURN u
    UNION
    MATCH (u:Image {id: seed.id}) RETURN u
  }
  WITH seed, u WHERE $collections IS NULL OR u.collection IN $collections
  CALL (u) {
    MATCH (u)-[:MENTIONS]->(e:Entity)
    WHERE NOT e.type IN $skip_types
    WITH DISTINCT e
    WITH e, COUNT { (e)<-[:MENTIONS]-() } AS degree
    WHERE degree <= $max_degree
    RETURN e, degree ORDER BY degree, e.id LIMIT $fanout
  }
  RETURN u.id AS start, seed.score AS start_score, e, degree
  UNION ALL
  UNWIND $entities AS qe
  MATCH (e:Entity {id: qe.id})
  WITH qe, e, COUNT { (e)<-[:MENTIONS]-() } AS degree
  WHERE degree <= $max_degree
  RETURN null AS start, qe.score AS start_score, e, degree
}
WITH e, degree, start, start_score ORDER BY start_score DESC
WITH e, degree, collect({start: start, score: start_score})[0] AS best
ORDER BY best.score / degree DESC, e.id LIMIT $max_entities
CALL (e) {
  RETURN e AS via, null AS step, null AS predicate, 0 AS weight, 0 AS via_degree
  UNION ALL
  MATCH (e)-[r:RELATED|SYNONYM]-(other:Entity)
  WHERE other <> e AND NOT other.type IN $skip_types AND coalesce(r.status, '') <> 'rejected'
    AND CASE type(r)
      WHEN 'SYNONYM' THEN r.score >= $synonym_min_score
      ELSE $collections IS NULL
           OR EXISTS { MATCH (d:Document) WHERE d.id IN r.documents AND d.collection IN $collections }
    END
  WITH other, type(r) AS step, r.predicate AS predicate,
       CASE type(r) WHEN 'SYNONYM' THEN r.score / (1.0 - CASE WHEN r.score > 0.99 THEN 0.99 ELSE r.score END)
                    ELSE r.weight END AS weight
  ORDER BY weight DESC
  WITH other, collect({step: step, predicate: predicate, weight: weight})[0] AS link
  ORDER BY link.weight DESC, other.id LIMIT $related_fanout * 4
  WITH other, link, COUNT { (other)<-[:MENTIONS]-() } AS via_degree
  WHERE via_degree <= $max_degree
  RETURN other AS via, link.step AS step, link.predicate AS predicate, link.weight AS weight, via_degree
  ORDER BY weight DESC, via_degree, other.id LIMIT $related_fanout
}
CALL (via) {
  MATCH (via)<-[m:MENTIONS]-(t)
  WHERE m.sentence = 0 AND ($collections IS NULL OR t.collection IN $collections)
  WITH DISTINCT t LIMIT $fanout * 4
  WITH t ORDER BY elementId(t) LIMIT $fanout
  RETURN collect(t) AS lead
}
CALL (via, lead) {
  WITH via, lead WHERE size(lead) < $fanout
  MATCH (via)<-[m:MENTIONS]-(t)
  WHERE NOT t IN lead AND ($collections IS NULL OR t.collection IN $collections)
  WITH t, min(m.sentence) AS sentence ORDER BY sentence, elementId(t) LIMIT $fanout
  RETURN collect(t) AS body, collect(sentence) AS body_sentences
}
WITH best, e, degree, via, step, predicate, weight, via_degree,
     (lead + body)[..$fanout] AS reached, ([unit IN lead | 0] + body_sentences)[..$fanout] AS sentences
WITH best, e, degree, via, step, predicate, weight, via_degree, sentences,
     [unit IN reached | unit.id] AS units, [unit IN reached | labels(unit)[0]] AS labels
RETURN best.start AS start, best.score AS start_score, e.id AS entity, degree,
       CASE WHEN via = e THEN null ELSE via.id END AS related, step, predicate, weight, via_degree,
       units, labels, sentences
UNION ALL
UNWIND $seeds AS seed
MATCH (u:Chunk {id: seed.id})-[:NEXT]-(t:Chunk)
WHERE $collections IS NULL OR (u.collection IN $collections AND t.collection IN $collections)
WITH u, seed, collect(t.id) AS units
RETURN u.id AS start, seed.score AS start_score, null AS entity, 0 AS degree, null AS related, null AS step,
       null AS predicate, 0 AS weight, 0 AS via_degree, units, null AS labels, null AS sentences
"""

# The lexical seed channel: Lucene's BM25 over the text of chunks, rows and images (the
# unit_text_fulltext index, kept up to date by Neo4j as units are written and deleted). The index
# spans every collection, so it is asked for $limit hits and the first $k in $collections are kept.
ANSWER_LEXICAL = """
CALL db.index.fulltext.queryNodes('unit_text_fulltext', $query, {limit: $limit}) YIELD node, score
WITH node, score WHERE $collections IS NULL OR node.collection IN $collections
RETURN node.id AS id, labels(node)[0] AS label, score, node.collection AS collection
ORDER BY score DESC, id LIMIT $k
"""

# Entity linking: which of the ids a question's names could have are graph entities, with how
# many units mention each (rarer names link more strongly).
ANSWER_ENTITY_LINK = """
UNWIND $candidates AS candidate
MATCH (e:Entity {id: candidate.id})
RETURN candidate.span AS span, e.id AS id, e.name AS name, COUNT { (e)<-[:MENTIONS]-() } AS degree
"""

# Entity linking by embedding: the entities whose names' embeddings are nearest each of the
# question's names that matched no entity exactly (the entity_name_vectors index).
ANSWER_ENTITY_NEAREST = """
UNWIND $rows AS row
CALL db.index.vector.queryNodes('entity_name_vectors', $k, row.vector) YIELD node, score
WITH row, node, score WHERE score >= $min_score
RETURN row.span AS span, node.id AS id, node.name AS name, score, COUNT { (node)<-[:MENTIONS]-() } AS degree
"""

# The details of the units that made the shortlist, with their documents; a unit outside
# $collections is not returned (the access predicate applies here too).
ANSWER_UNITS = """
UNWIND $ids AS id
CALL (id) {
  MATCH (u:Chunk {id: id}) RETURN u
  UNION
  MATCH (u:Row {id: id}) RETURN u
  UNION
  MATCH (u:Image {id: id}) RETURN u
}
MATCH (d:Document {id: u.document_id})
WHERE $collections IS NULL OR d.collection IN $collections
RETURN u.id AS id, labels(u)[0] AS label, u.text AS text, u.path AS path,
       u.sentence_starts AS sentence_starts, u.sentence_ends AS sentence_ends,
       d.id AS document_id, coalesce(d.path, d.title) AS document, d.collection AS collection
"""


# --- answering benchmark: bulk filler for a 100k-chunk graph ------------------------------
# benchmarks/answer_latency.py ingests a real base corpus, then grows the graph to 100k chunks
# with filler shaped like ingested data: filler chunks copy a base chunk's text (server side),
# mention base entities and add evidence to RELATED edges. Run only against the benchmark's
# private database (var/bench-answers); nothing else sends these statements.

# Every chunk of a collection with its document and its mentions (one per entity, the first).
ANSWER_BENCH_BASE_CHUNKS = """
MATCH (d:Document)-[:HAS_CHUNK]->(c:Chunk)
WHERE d.collection = $collection
OPTIONAL MATCH (c)-[m:MENTIONS]->(e:Entity)
WITH d, c, e, collect(m)[0] AS m
WITH d, c, collect(CASE WHEN e IS NULL THEN null
                   ELSE {entity: e.id, start: m.start, end: m.end, sentence: m.sentence} END) AS mentions
RETURN c.id AS id, size(c.text) AS chars, d.id AS document_id, d.title AS title, d.path AS path, mentions
ORDER BY c.id
"""

ANSWER_BENCH_ENTITY_DEGREES = """
MATCH (e:Entity)
RETURN e.id AS id, COUNT { (e)<-[:MENTIONS]-() } AS degree
"""

# Each RELATED edge once per unit in its evidence.
ANSWER_BENCH_RELATION_EVIDENCE = """
MATCH (a:Entity)-[r:RELATED]->(b:Entity)
UNWIND r.evidence AS unit
RETURN unit, a.id AS source, b.id AS target, r.predicate AS predicate
"""

ANSWER_BENCH_CHUNKS_COPY = """
UNWIND $rows AS row
MATCH (d:Document {id: row.document_id})
MATCH (src:Chunk {id: row.source})
CREATE (d)-[:HAS_CHUNK]->(c:Chunk {id: row.id})
SET c.text = src.text, c.ord = row.ord, c.sha256 = src.sha256, c.start = src.start, c.end = src.end,
    c.page = src.page, c.sentence_starts = src.sentence_starts, c.sentence_ends = src.sentence_ends,
    c.document_id = row.document_id, c.collection = row.collection
"""

ANSWER_BENCH_ENTITY_DOCUMENTS_ADD = """
UNWIND $rows AS row
MATCH (e:Entity {id: row.id})
SET e.documents = e.documents + row.documents
"""

ANSWER_BENCH_RELATIONS_ADD = """
UNWIND $rows AS row
MATCH (a:Entity {id: row.source}), (b:Entity {id: row.target})
MERGE (a)-[r:RELATED {predicate: row.predicate}]->(b)
ON CREATE SET r.evidence = [], r.documents = []
SET r.evidence = r.evidence + row.evidence, r.documents = r.documents + row.documents
SET r.weight = size(r.evidence)
"""

ANSWER_BENCH_RELATIONSHIP_COUNTS = "MATCH ()-[r]->() RETURN type(r) AS type, count(*) AS count ORDER BY type"

# The expansion statement itself, profiled (operators with their rows and db hits).
ANSWER_BENCH_EXPAND_PROFILE = "PROFILE " + ANSWER_EXPAND.lstrip()


# --- curation pages: reads ---
# What the curation pages (apps.curation) show. $collections is the reader's collections (null:
# every collection); it applies to every unit, document and relation shown, so a curator never sees
# the text, documents or relations of a collection they cannot read. Entities count as readable when
# a unit of a readable collection mentions them.

# One page of entities whose name or an alias contains $query (lowercased), most mentioned first.
CURATION_ENTITIES_PAGE = """
MATCH (e:Entity)
WHERE ($query = '' OR toLower(coalesce(e.aliases_text, e.name)) CONTAINS $query)
  AND ($type = '' OR e.type = $type)
WITH e, COUNT { (e)<-[:MENTIONS]-(u) WHERE $collections IS NULL OR u.collection IN $collections } AS mentions
WHERE mentions > 0 OR $collections IS NULL
WITH e, mentions ORDER BY mentions DESC, e.name, e.id
WITH collect({id: e.id, name: e.name, type: e.type, aliases: coalesce(e.aliases, []), mentions: mentions}) AS rows
RETURN size(rows) AS total, rows[$skip..$skip + $limit] AS rows
"""

# For each of $ids: the readable documents that mention it.
CURATION_ENTITY_DOCUMENT_COUNTS = """
UNWIND $ids AS id
MATCH (e:Entity {id: id})
CALL (e) {
  OPTIONAL MATCH (e)<-[:MENTIONS]-(u)
  WHERE $collections IS NULL OR u.collection IN $collections
  RETURN count(DISTINCT u.document_id) AS documents
}
RETURN e.id AS id, documents
"""

CURATION_ENTITY_TYPES = "MATCH (e:Entity) RETURN DISTINCT e.type AS type ORDER BY type"

# One entity: its names, readable mentions and documents, and everything a deletion would take.
CURATION_ENTITY = """
MATCH (e:Entity {id: $id})
CALL (e) {
  OPTIONAL MATCH (e)<-[:MENTIONS]-(u)
  WHERE $collections IS NULL OR u.collection IN $collections
  RETURN count(u) AS mentions, count(DISTINCT u.document_id) AS documents
}
RETURN e {.id, .name, .type, aliases: coalesce(e.aliases, [])} AS entity, mentions, documents,
       COUNT { (e)<-[:MENTIONS]-() } AS all_mentions, COUNT { (e)-[:RELATED]-() } AS all_relations,
       size(coalesce(e.documents, [])) AS all_documents
"""

# Readable units that mention the entity (each with its first mention's offsets) and their documents.
CURATION_ENTITY_SNIPPETS = """
MATCH (e:Entity {id: $id})<-[m:MENTIONS]-(u)
WHERE $collections IS NULL OR u.collection IN $collections
WITH u, m ORDER BY m.start
WITH u, collect(m)[0] AS m
MATCH (d:Document {id: u.document_id})
RETURN u.id AS unit, labels(u)[0] AS label, coalesce(u.text, '') AS text, m.start AS start, m.end AS end,
       d.id AS document_id, d.path AS path, d.title AS title, d.collection AS collection
ORDER BY d.collection, d.path, coalesce(u.ord, u.idx, 0), u.id
LIMIT $limit
"""

# The entity's relations both ways, with at least one supporting document the reader can read
# (extracted ones before co-occurrences), each with one sentence of its evidence where both ends
# are mentioned (the units in $collections only).
CURATION_ENTITY_RELATIONS = """
MATCH (e:Entity {id: $id})-[r:RELATED]-(other:Entity)
WHERE $collections IS NULL
   OR EXISTS { MATCH (d:Document) WHERE d.id IN r.documents AND d.collection IN $collections }
WITH e, r, other, r.predicate = 'co_occurs_with' AS co_occurrence
ORDER BY co_occurrence, coalesce(r.weight, 0) DESC, r.predicate, other.name, other.id
LIMIT $limit
CALL (e, r, other) {
  UNWIND coalesce(r.evidence, [])[..5] AS unit_id
  CALL (unit_id) {
    MATCH (u:Chunk {id: unit_id}) RETURN u
    UNION
    MATCH (u:Row {id: unit_id}) RETURN u
    UNION
    MATCH (u:Image {id: unit_id}) RETURN u
  }
  WITH e, other, u WHERE $collections IS NULL OR u.collection IN $collections
  MATCH (u)-[m1:MENTIONS]->(e)
  MATCH (u)-[m2:MENTIONS]->(other)
  WHERE m2.sentence = m1.sentence
  OPTIONAL MATCH (d:Document {id: u.document_id})
  RETURN u.text AS evidence_text, u.sentence_starts[m1.sentence] AS evidence_start,
         u.sentence_ends[m1.sentence] AS evidence_end, u.id AS evidence_unit, u.document_id AS evidence_document_id,
         coalesce(d.collection + '/' + d.path, d.title) AS evidence_document
  LIMIT 1
}
RETURN startNode(r).id AS source, r.predicate AS predicate, endNode(r).id AS target,
       startNode(r) = e AS outgoing, coalesce(r.status, 'proposed') AS status, coalesce(r.weight, 0) AS weight,
       other {.id, .name, .type} AS other, co_occurrence, evidence_text, evidence_start, evidence_end,
       evidence_unit, evidence_document_id, evidence_document,
       COUNT { MATCH (d:Document) WHERE d.id IN coalesce(r.documents, [])
               AND ($collections IS NULL OR d.collection IN $collections) } AS documents
"""

# The readable documents that mention the entity, with how many mentions each holds.
CURATION_ENTITY_DOCUMENTS = """
MATCH (e:Entity {id: $id})<-[:MENTIONS]-(u)
WHERE $collections IS NULL OR u.collection IN $collections
WITH u.document_id AS document_id, count(*) AS mentions
MATCH (d:Document {id: document_id})
RETURN d.id AS id, d.path AS path, d.title AS title, d.collection AS collection, mentions
ORDER BY collection, path
"""

# Merge suggestions start from the $limit most mentioned readable entities.
CURATION_SUGGESTION_CANDIDATES = """
MATCH (e:Entity)
WITH e, COUNT { (e)<-[:MENTIONS]-(u) WHERE $collections IS NULL OR u.collection IN $collections } AS mentions
WHERE mentions > 0
RETURN e.id AS id, e.name AS name, e.type AS type, coalesce(e.aliases, []) AS aliases, mentions
ORDER BY mentions DESC, e.id
LIMIT $limit
"""

# Stored synonym edges of $statuses between entities both mentioned in a readable unit, best first.
CURATION_SYNONYMS = """
MATCH (a:Entity)-[s:SYNONYM]->(b:Entity)
WHERE s.status IN $statuses
WITH a, b, s ORDER BY s.score DESC, a.id, b.id
WITH a, b, s,
     COUNT { (a)<-[:MENTIONS]-(u) WHERE $collections IS NULL OR u.collection IN $collections } AS a_mentions,
     COUNT { (b)<-[:MENTIONS]-(u) WHERE $collections IS NULL OR u.collection IN $collections } AS b_mentions
WHERE a_mentions > 0 AND b_mentions > 0
RETURN a.id AS source, a.name AS source_name, a.type AS source_type, a_mentions AS source_mentions,
       b.id AS target, b.name AS target_name, b.type AS target_type, b_mentions AS target_mentions,
       s.score AS score, s.status AS status
LIMIT $limit
"""

CURATION_MENTION_COUNTS = """
UNWIND $ids AS id
MATCH (e:Entity {id: id})
RETURN e.id AS id, COUNT { (e)<-[:MENTIONS]-() } AS mentions
"""

# The names of these entities (those that exist).
CURATION_NAMES_OF = """
UNWIND $ids AS id
MATCH (e:Entity {id: id})
RETURN e.id AS id, e.name AS name
"""

CURATION_ENTITY_NAMES = """
MATCH (e:Entity {id: $id})
RETURN e.name AS name, coalesce(e.aliases, []) AS aliases, e.type AS type
"""

# A split: how many of the entity's mentions lie in $documents, of how many.
CURATION_SPLIT_COUNTS = """
MATCH (e:Entity {id: $id})
OPTIONAL MATCH (e)<-[:MENTIONS]-(u)
RETURN count(CASE WHEN u.document_id IN $documents THEN 1 END) AS moving, count(u) AS total
"""

# A split: the entity's relations with evidence in $documents' units, and whether all of it moves.
CURATION_SPLIT_RELATIONS = """
MATCH (e:Entity {id: $id})<-[:MENTIONS]-(u)
WHERE u.document_id IN $documents
WITH e, collect(DISTINCT u.id) AS units
MATCH (e)-[r:RELATED]-(:Entity)
WHERE any(x IN coalesce(r.evidence, []) WHERE x IN units)
RETURN startNode(r).id AS source, r.predicate AS predicate, endNode(r).id AS target,
       coalesce(r.status, 'proposed') AS status, all(x IN r.evidence WHERE x IN units) AS moved
"""

# One page of relations passing the filters (empty strings filter nothing), strongest first, each with
# one evidence sentence the reader can read (where both ends are mentioned), the document it is in, and
# how many readable documents support the relation.
CURATION_RELATIONS_PAGE = """
MATCH (a:Entity)-[r:RELATED]->(b:Entity)
WHERE ($status = '' OR coalesce(r.status, 'proposed') = $status)
  AND ($predicate = '' OR r.predicate = $predicate)
  AND ($entity = '' OR a.id = $entity OR b.id = $entity
       OR toLower(a.name) CONTAINS toLower($entity) OR toLower(b.name) CONTAINS toLower($entity))
  AND ($collections IS NULL
       OR EXISTS { MATCH (d:Document) WHERE d.id IN r.documents AND d.collection IN $collections })
WITH a, r, b ORDER BY coalesce(r.weight, 0) DESC, a.name, r.predicate, b.name
WITH collect([a, r, b]) AS found
CALL (found) {
  UNWIND range(0, size(found[$skip..$skip + $limit]) - 1) AS i
  WITH i, found[$skip + i][0] AS a, found[$skip + i][1] AS r, found[$skip + i][2] AS b
  OPTIONAL CALL (a, r, b) {
    UNWIND coalesce(r.evidence, [])[..5] AS unit_id
    CALL (unit_id) {
      MATCH (u:Chunk {id: unit_id}) RETURN u
      UNION
      MATCH (u:Row {id: unit_id}) RETURN u
      UNION
      MATCH (u:Image {id: unit_id}) RETURN u
    }
    WITH a, b, u WHERE $collections IS NULL OR u.collection IN $collections
    MATCH (u)-[m1:MENTIONS]->(a)
    MATCH (u)-[m2:MENTIONS]->(b)
    WHERE m2.sentence = m1.sentence
    OPTIONAL MATCH (d:Document {id: u.document_id})
    RETURN u.text AS evidence_text, u.sentence_starts[m1.sentence] AS evidence_start,
           u.sentence_ends[m1.sentence] AS evidence_end, u.id AS evidence_unit,
           u.document_id AS evidence_document_id, coalesce(d.collection + '/' + d.path, d.title) AS evidence_document
    LIMIT 1
  }
  WITH i, a, r, b, evidence_text, evidence_start, evidence_end, evidence_unit, evidence_document_id,
       evidence_document ORDER BY i
  RETURN collect({source: a.id, source_name: a.name, source_type: a.type, predicate: r.predicate,
                  target: b.id, target_name: b.name, target_type: b.type,
                  status: coalesce(r.status, 'proposed'), weight: coalesce(r.weight, 0),
                  evidence_text: evidence_text, evidence_start: evidence_start, evidence_end: evidence_end,
                  evidence_unit: evidence_unit, evidence_document_id: evidence_document_id,
                  evidence_document: evidence_document,
                  documents: COUNT { MATCH (d:Document) WHERE d.id IN coalesce(r.documents, [])
                                     AND ($collections IS NULL OR d.collection IN $collections) }}) AS rows
}
RETURN size(found) AS total, rows
"""

CURATION_PREDICATES = "MATCH ()-[r:RELATED]->() RETURN DISTINCT r.predicate AS predicate ORDER BY predicate LIMIT 500"

# Whether the relation has a supporting document the reader can read (no row: no such relation).
CURATION_RELATION_READABLE = """
MATCH (:Entity {id: $source})-[r:RELATED {predicate: $predicate}]->(:Entity {id: $target})
RETURN $collections IS NULL
       OR EXISTS { MATCH (d:Document) WHERE d.id IN r.documents AND d.collection IN $collections } AS readable
"""

# What deleting a document removes (apps.ingest.services.document_delete): its units, and, read the
# way DOCUMENT_ENTITIES_RELEASE and DOCUMENT_RELATIONS_RELEASE write it, the entities and relations
# that only it supports (the others only lose it from their documents and evidence).
CURATION_DOCUMENT_PARTS = """
MATCH (d:Document {id: $document_id})
CALL (d) { OPTIONAL MATCH (d)-[:HAS_CHUNK]->(c:Chunk) RETURN count(c) AS chunks }
CALL (d) { OPTIONAL MATCH (d)-[:HAS_IMAGE]->(i:Image) RETURN count(i) AS images }
CALL (d) { OPTIONAL MATCH (d)-[:HAS_TABLE]->(t:Table) RETURN count(t) AS tables }
CALL (d) { OPTIONAL MATCH (d)-[:HAS_TABLE]->(:Table)-[:HAS_ROW]->(r:Row) RETURN count(r) AS rows }
RETURN chunks, images, tables, rows
"""

CURATION_DOCUMENT_ENTITIES_RELEASED = """
MATCH (d:Document {id: $document_id})
MATCH (d)-[:HAS_CHUNK|HAS_IMAGE|HAS_TABLE|HAS_ROW*1..2]->()-[:MENTIONS]->(e:Entity)
WITH DISTINCT e
WITH e, size([x IN coalesce(e.documents, []) WHERE x <> $document_id]) = 0 AS released
WITH e, released ORDER BY e.name, e.id
RETURN count(e) AS mentioned, count(CASE WHEN released THEN 1 END) AS released,
       collect(CASE WHEN released THEN e {.id, .name, .type} END)[..$limit] AS entities
"""

CURATION_DOCUMENT_RELATIONS_RELEASED = """
MATCH (d:Document {id: $document_id})
MATCH (d)-[:HAS_CHUNK|HAS_IMAGE|HAS_TABLE|HAS_ROW*1..2]->()-[:MENTIONS]->(e:Entity)
WITH DISTINCT e
MATCH (e)-[r:RELATED]-()
WHERE $document_id IN r.documents
WITH DISTINCT r
RETURN count(r) AS supported,
       count(CASE WHEN size([x IN r.documents WHERE x <> $document_id]) = 0 THEN 1 END) AS released
"""

# Curation writes that follow change-log entries (apps.ledger.graph.OPERATIONS); each is
# idempotent: applying it twice changes nothing more.

ENTITY_ALIAS_ADD = """
MATCH (e:Entity {id: $id})
SET e.aliases = CASE WHEN $alias = e.name OR $alias IN coalesce(e.aliases, []) THEN coalesce(e.aliases, [])
                     ELSE coalesce(e.aliases, []) + $alias END
SET e.aliases_text = reduce(s = e.name, a IN e.aliases | s + ' ' + a)
RETURN e.id AS id
"""

# The mentions of $id in units of $documents move to the new entity $new_id (created with $name and
# $type), with the evidence of its relations that lies in those units; relations left without
# evidence go. The documents move from one entity's list to the other's.
ENTITY_SPLIT = """
MATCH (e:Entity {id: $id})
MERGE (n:Entity {id: $new_id})
ON CREATE SET n.name = $name, n.type = $type, n.aliases = [], n.documents = [], n.aliases_text = $name
WITH e, n
CALL (e) {
  OPTIONAL MATCH (u)-[:MENTIONS]->(e) WHERE u.document_id IN $documents
  RETURN collect(DISTINCT u.id) AS units
}
CALL (e, n) {
  MATCH (u)-[m:MENTIONS]->(e) WHERE u.document_id IN $documents
  CREATE (u)-[:MENTIONS {start: m.start, end: m.end, sentence: m.sentence}]->(n)
  DELETE m
}
CALL (e, n, units) {
  MATCH (e)-[r:RELATED]->(other:Entity)
  WHERE other <> n AND any(x IN coalesce(r.evidence, []) WHERE x IN units)
  MERGE (n)-[s:RELATED {predicate: r.predicate}]->(other)
  ON CREATE SET s.evidence = [], s.documents = []
  SET s.evidence = s.evidence + [x IN r.evidence WHERE x IN units AND NOT x IN s.evidence],
      s.documents = s.documents + [x IN r.documents WHERE x IN $documents AND NOT x IN s.documents],
      s.status = coalesce(s.status, r.status)
  SET s.weight = size(s.evidence)
  SET r.evidence = [x IN r.evidence WHERE NOT x IN units], r.documents = [x IN r.documents WHERE NOT x IN $documents]
  SET r.weight = size(r.evidence)
  WITH r WHERE size(r.evidence) = 0
  DELETE r
}
CALL (e, n, units) {
  MATCH (other:Entity)-[r:RELATED]->(e)
  WHERE other <> n AND any(x IN coalesce(r.evidence, []) WHERE x IN units)
  MERGE (other)-[s:RELATED {predicate: r.predicate}]->(n)
  ON CREATE SET s.evidence = [], s.documents = []
  SET s.evidence = s.evidence + [x IN r.evidence WHERE x IN units AND NOT x IN s.evidence],
      s.documents = s.documents + [x IN r.documents WHERE x IN $documents AND NOT x IN s.documents],
      s.status = coalesce(s.status, r.status)
  SET s.weight = size(s.evidence)
  SET r.evidence = [x IN r.evidence WHERE NOT x IN units], r.documents = [x IN r.documents WHERE NOT x IN $documents]
  SET r.weight = size(r.evidence)
  WITH r WHERE size(r.evidence) = 0
  DELETE r
}
SET n.documents = n.documents + [x IN coalesce(e.documents, []) WHERE x IN $documents AND NOT x IN n.documents],
    e.documents = [x IN coalesce(e.documents, []) WHERE NOT x IN $documents]
RETURN n.id AS id
"""

# The predicate is part of the relation's MERGE key, so a new predicate is a new relationship
# with the old one's properties; the old one goes.
RELATION_PREDICATE_SET = """
MATCH (a:Entity {id: $source})-[r:RELATED {predicate: $predicate}]->(b:Entity {id: $target})
MERGE (a)-[n:RELATED {predicate: $new_predicate}]->(b)
ON CREATE SET n = properties(r), n.predicate = $new_predicate
ON MATCH SET n.evidence = coalesce(n.evidence, [])
                          + [x IN coalesce(r.evidence, []) WHERE NOT x IN coalesce(n.evidence, [])],
             n.documents = coalesce(n.documents, [])
                           + [x IN coalesce(r.documents, []) WHERE NOT x IN coalesce(n.documents, [])],
             n.status = coalesce(n.status, r.status)
SET n.weight = coalesce(size(n.evidence), n.weight)
DELETE r
RETURN count(n) AS moved
"""


# --- the search page: names along an answer's graph paths, and image files ------------------
# Each node of a path by its id: entities by name, units by a piece of their text (only units of
# $collections; null: every collection). Nodes that are gone are simply not returned.
PATH_NODES = """
UNWIND $ids AS id
CALL (id) {
  MATCH (n:Entity {id: id}) RETURN n, n.name AS name, null AS collection
  UNION
  MATCH (n:Chunk {id: id}) RETURN n, n.text AS name, n.collection AS collection
  UNION
  MATCH (n:Row {id: id}) RETURN n, n.text AS name, n.collection AS collection
  UNION
  MATCH (n:Image {id: id}) RETURN n, coalesce(n.name, n.text) AS name, n.collection AS collection
}
WITH id, n, name, collection
WHERE collection IS NULL OR $collections IS NULL OR collection IN $collections
RETURN id, labels(n)[0] AS label, left(coalesce(name, ''), 80) AS name
"""

# The predicate of the relation between each pair of entities (either direction), if any.
PATH_PREDICATES = """
UNWIND $pairs AS pair
MATCH (a:Entity {id: pair[0]})-[r:RELATED]-(b:Entity {id: pair[1]})
WHERE coalesce(r.status, '') <> 'rejected'
WITH pair, r ORDER BY r.weight DESC
RETURN pair[0] AS source, pair[1] AS target, collect(r.predicate)[0] AS predicate
"""

# Example questions for the search page: the names most documents of $collections mention, among
# the first $documents documents by id (a fixed, content-derived sample, so the read stays small on a
# large graph), of the types in $types.
SEARCH_EXAMPLE_ENTITIES = """
MATCH (d:Document)
WHERE $collections IS NULL OR d.collection IN $collections
WITH d ORDER BY d.id LIMIT $documents
MATCH (d)-[:HAS_CHUNK]->(:Chunk)-[:MENTIONS]->(e:Entity)
WHERE e.type IN $types AND size(e.name) <= 60
WITH e, count(DISTINCT d) AS documents, count(*) AS mentions
ORDER BY documents DESC, mentions DESC, e.name
LIMIT $limit
RETURN e.name AS name, e.type AS type
"""

# One image's stored files and its document's collection (the access check of the media view).
IMAGE_FILES = """
MATCH (d:Document)-[:HAS_IMAGE]->(i:Image {id: $id})
RETURN i.path AS path, i.thumbnail AS thumbnail, i.format AS format, d.collection AS collection,
       coalesce(d.path, d.title) AS document
LIMIT 1
"""

# --- the graph explorer (apps.core.explore, docs/graph.md) ----------------------------------
# $collections is the reader's collections (null: every collection), narrowed by the explorer's own
# collection filter; it applies inside every statement: an entity is shown when a unit of $collections
# mentions it, a RELATED edge when a document of $collections supports it (a SYNONYM edge when both ends
# are shown), and units only of $collections. Rejected relations and synonyms are left out. $types and
# $relations (null: all) filter the neighbours' entity types and the edges' kinds (a RELATED edge's
# predicate, or 'synonym').

# Entities whose name or an alias contains $query (lowercased), most mentioned first.
GRAPH_ENTITY_SEARCH = """
MATCH (e:Entity)
WHERE toLower(coalesce(e.aliases_text, e.name)) CONTAINS $query
WITH e, COUNT { (e)<-[:MENTIONS]-(u) WHERE $collections IS NULL OR u.collection IN $collections } AS mentions
WHERE mentions > 0 OR $collections IS NULL
RETURN e.id AS id, e.name AS name, e.type AS type, mentions
ORDER BY mentions DESC, name, id
LIMIT $limit
"""

# One entity, when a unit of $collections mentions it (every entity when $collections is null).
GRAPH_ENTITY = """
MATCH (e:Entity {id: $id})
WITH e, COUNT { (e)<-[:MENTIONS]-(u) WHERE $collections IS NULL OR u.collection IN $collections } AS mentions
WHERE mentions > 0 OR $collections IS NULL
RETURN e.id AS id, e.name AS name, e.type AS type, mentions
"""

# The entity's shown neighbours over RELATED and SYNONYM edges, strongest first: how many, and the first $limit.
GRAPH_NEIGHBOURS = """
MATCH (e:Entity {id: $id})-[r:RELATED|SYNONYM]-(n:Entity)
WHERE n <> e AND coalesce(r.status, '') <> 'rejected'
  AND (type(r) = 'SYNONYM' OR $collections IS NULL
       OR EXISTS { MATCH (d:Document) WHERE d.id IN r.documents AND d.collection IN $collections })
  AND ($types IS NULL OR n.type IN $types)
  AND ($relations IS NULL OR CASE type(r) WHEN 'SYNONYM' THEN 'synonym' ELSE r.predicate END IN $relations)
WITH n, max(CASE type(r) WHEN 'SYNONYM' THEN coalesce(r.score, 0.0) ELSE toFloat(coalesce(r.weight, 0)) END) AS strength
WITH n, strength,
     COUNT { (n)<-[:MENTIONS]-(u) WHERE $collections IS NULL OR u.collection IN $collections } AS mentions
WHERE mentions > 0 OR $collections IS NULL
WITH n, strength, mentions ORDER BY strength DESC, mentions DESC, n.name, n.id
WITH collect({id: n.id, name: n.name, type: n.type, mentions: mentions}) AS rows
RETURN size(rows) AS total, rows[..$limit] AS rows
"""

# The shown edges among the entities $ids (each once), strongest first, with how many documents of
# $collections support each and one sentence of its evidence where both ends are mentioned.
GRAPH_EDGES = """
UNWIND $ids AS id
MATCH (a:Entity {id: id})-[r:RELATED|SYNONYM]->(b:Entity)
WHERE b.id IN $ids AND a <> b AND coalesce(r.status, '') <> 'rejected'
  AND (type(r) = 'SYNONYM' OR $collections IS NULL
       OR EXISTS { MATCH (d:Document) WHERE d.id IN r.documents AND d.collection IN $collections })
  AND ($relations IS NULL OR CASE type(r) WHEN 'SYNONYM' THEN 'synonym' ELSE r.predicate END IN $relations)
WITH a, r, b,
     CASE type(r) WHEN 'SYNONYM' THEN coalesce(r.score, 0.0) ELSE toFloat(coalesce(r.weight, 0)) END AS strength
ORDER BY strength DESC, a.id, b.id
LIMIT $limit
OPTIONAL CALL (a, r, b) {
  UNWIND coalesce(r.evidence, [])[..5] AS unit_id
  CALL (unit_id) {
    MATCH (u:Chunk {id: unit_id}) RETURN u
    UNION
    MATCH (u:Row {id: unit_id}) RETURN u
    UNION
    MATCH (u:Image {id: unit_id}) RETURN u
  }
  WITH a, b, u WHERE $collections IS NULL OR u.collection IN $collections
  MATCH (u)-[m1:MENTIONS]->(a)
  MATCH (u)-[m2:MENTIONS]->(b)
  WHERE m2.sentence = m1.sentence
  RETURN u.text AS evidence_text, u.sentence_starts[m1.sentence] AS evidence_start,
         u.sentence_ends[m1.sentence] AS evidence_end
  LIMIT 1
}
RETURN a.id AS source, b.id AS target, type(r) AS type,
       CASE type(r) WHEN 'SYNONYM' THEN 'synonym' ELSE r.predicate END AS kind, strength,
       coalesce(r.status, CASE type(r) WHEN 'SYNONYM' THEN 'suggested' ELSE 'proposed' END) AS status,
       COUNT { MATCH (d:Document) WHERE d.id IN coalesce(r.documents, [])
               AND ($collections IS NULL OR d.collection IN $collections) } AS documents,
       evidence_text, evidence_start, evidence_end
"""

# The nodes of an answer's paths that the reader may see: entities a unit of $collections mentions,
# units of $collections (with their documents' titles).
GRAPH_PATH_NODES = """
UNWIND $ids AS id
CALL (id) {
  MATCH (n:Entity {id: id})
  WHERE $collections IS NULL OR EXISTS { (n)<-[:MENTIONS]-(u) WHERE u.collection IN $collections }
  RETURN n, n.name AS name, n.type AS type, null AS document
  UNION
  CALL (id) {
    MATCH (n:Chunk {id: id}) RETURN n
    UNION
    MATCH (n:Row {id: id}) RETURN n
    UNION
    MATCH (n:Image {id: id}) RETURN n
  }
  WITH n WHERE $collections IS NULL OR n.collection IN $collections
  OPTIONAL MATCH (d:Document {id: n.document_id})
  RETURN n, coalesce(n.name, n.text) AS name, null AS type, coalesce(d.title, d.path) AS document
}
RETURN id, labels(n)[0] AS label, left(coalesce(name, ''), 200) AS name, type, document
"""

# The predicate of the strongest shown RELATED edge between each pair of entities (either direction).
GRAPH_PATH_PREDICATES = """
UNWIND $pairs AS pair
MATCH (a:Entity {id: pair[0]})-[r:RELATED]-(b:Entity {id: pair[1]})
WHERE coalesce(r.status, '') <> 'rejected'
  AND ($collections IS NULL
       OR EXISTS { MATCH (d:Document) WHERE d.id IN r.documents AND d.collection IN $collections })
WITH pair, r ORDER BY r.weight DESC
RETURN pair[0] AS source, pair[1] AS target, collect(r.predicate)[0] AS predicate
"""


# --- the document viewer (apps.documents, docs/search.md) ----------------------------------
# $collections is the reader's collections (null: every collection): a document of another
# collection is not returned, so nothing of it is read.

# The document, when the reader may read its collection, with how many units of each kind it holds.
VIEW_DOCUMENT = """
MATCH (d:Document {id: $id})
WHERE $collections IS NULL OR d.collection IN $collections
RETURN d.id AS id, d.title AS title, d.path AS path, d.mime AS mime, d.collection AS collection,
       d.size AS size, d.sha256 AS sha256, coalesce(d.page_starts, []) AS page_starts,
       coalesce(d.page_numbers, []) AS page_numbers, coalesce(d.page_images, []) AS page_images,
       coalesce(d.page_widths, []) AS page_widths, coalesce(d.page_heights, []) AS page_heights,
       COUNT { (d)-[:HAS_CHUNK]->() } AS chunks, COUNT { (d)-[:HAS_TABLE]->() } AS tables,
       COUNT { (d)-[:HAS_IMAGE]->() } AS images
"""

# Where a unit of the document sits: a chunk's position, a row's table and index, an image's page.
VIEW_UNIT = """
MATCH (d:Document {id: $document_id})
CALL (d) {
  MATCH (d)-[:HAS_CHUNK]->(u:Chunk {id: $unit}) RETURN u, 'Chunk' AS label, u.ord AS position, null AS table
  UNION
  MATCH (d)-[:HAS_TABLE]->(t:Table)-[:HAS_ROW]->(u:Row {id: $unit})
  RETURN u, 'Row' AS label, u.idx AS position, t.id AS table
  UNION
  MATCH (d)-[:HAS_IMAGE]->(u:Image {id: $unit}) RETURN u, 'Image' AS label, 0 AS position, null AS table
}
RETURN label, position, table, u.page AS page
LIMIT 1
"""

# The document's chunks with $first <= ord < $last, in order.
VIEW_CHUNKS = """
MATCH (:Document {id: $id})-[:HAS_CHUNK]->(c:Chunk)
WHERE $first <= c.ord < $last
RETURN c.id AS id, c.ord AS ord, c.text AS text, c.page AS page, c.start AS start,
       c.sentence_starts AS sentence_starts, c.sentence_ends AS sentence_ends
ORDER BY c.ord
"""

# The document's tables, and each one's rows with $first <= idx < $last ($windows: table id -> [first, last]).
VIEW_TABLES = """
MATCH (:Document {id: $id})-[:HAS_TABLE]->(t:Table)
WITH t ORDER BY t.name, t.id
WITH t, coalesce($windows[t.id], [0, $rows]) AS window
CALL (t, window) {
  MATCH (t)-[:HAS_ROW]->(r:Row) WHERE window[0] <= r.idx < window[1]
  WITH r ORDER BY r.idx
  RETURN collect({id: r.id, idx: r.idx, text: r.text}) AS rows
}
RETURN t.id AS id, t.name AS name, t.columns AS columns, t.row_count AS row_count, window[0] AS first, rows
"""

# The document's images (the first $limit), by page and name.
VIEW_IMAGES = """
MATCH (:Document {id: $id})-[:HAS_IMAGE]->(i:Image)
RETURN i.id AS id, i.name AS name, i.page AS page, i.width AS width, i.height AS height, i.text AS text,
       i.labels AS labels, i.label_scores AS label_scores, i.ocr_text AS ocr_text
ORDER BY i.page, i.name, i.id
LIMIT $limit
"""


# --- backup and restore (docs/backup.md) -------------------------------------------------
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
