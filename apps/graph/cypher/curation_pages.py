"""What the curation pages read (``apps.curation.pages``, ``apps.curation.suggestions``)."""

from __future__ import annotations

from apps.graph.cypher.common import RELATION_DOCUMENTS, RELATION_EVIDENCE, RELATION_READABLE

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
  WITH u, $collections IS NULL OR u.collection IN $collections AS readable
  RETURN count(CASE WHEN readable THEN u END) AS mentions,
         count(DISTINCT CASE WHEN readable THEN u.document_id END) AS documents,
         count(u) AS all_mentions, count(DISTINCT u.document_id) AS all_documents
}
RETURN e {.id, .name, .type, aliases: coalesce(e.aliases, [])} AS entity, mentions, documents,
       all_mentions, COUNT { (e)-[:RELATED]-() } AS all_relations, all_documents
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
CURATION_ENTITY_RELATIONS = (
    """
MATCH (a:Entity {id: $id})-[r:RELATED]-(b:Entity)
WHERE """
    + RELATION_READABLE
    + """
WITH a, r, b, r.predicate = 'co_occurs_with' AS co_occurrence
ORDER BY co_occurrence, coalesce(r.weight, 0) DESC, r.predicate, b.name, b.id
LIMIT $limit
CALL (a, r, b) {"""
    + RELATION_EVIDENCE
    + """  OPTIONAL MATCH (d:Document {id: u.document_id})
  RETURN u.text AS evidence_text, u.sentence_starts[m1.sentence] AS evidence_start,
         u.sentence_ends[m1.sentence] AS evidence_end, u.id AS evidence_unit, u.document_id AS evidence_document_id,
         coalesce(d.collection + '/' + d.path, d.title) AS evidence_document
  LIMIT 1
}
RETURN startNode(r).id AS source, r.predicate AS predicate, endNode(r).id AS target,
       startNode(r) = a AS outgoing, coalesce(r.status, 'proposed') AS status, coalesce(r.weight, 0) AS weight,
       b {.id, .name, .type} AS other, co_occurrence, evidence_text, evidence_start, evidence_end,
       evidence_unit, evidence_document_id, evidence_document,
       """
    + RELATION_DOCUMENTS
    + """ AS documents
"""
)

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

# A split: the entity's relations with evidence in $documents, and whether all of it moves.
CURATION_SPLIT_RELATIONS = """
MATCH (a:Entity {id: $id})-[ev:EVIDENCE]-(b:Entity)
WHERE ev.document IN $documents
MATCH (a)-[r:RELATED {predicate: ev.predicate}]-(b) WHERE startNode(r) = startNode(ev)
WITH DISTINCT a, r, b
RETURN startNode(r).id AS source, r.predicate AS predicate, endNode(r).id AS target,
       coalesce(r.status, 'proposed') AS status,
       NOT EXISTS { MATCH (a)-[o:EVIDENCE {predicate: r.predicate}]-(b)
                    WHERE startNode(o) = startNode(r) AND NOT o.document IN $documents } AS moved
"""

# One page of relations passing the filters (empty strings filter nothing), strongest first, each with
# one evidence sentence the reader can read (where both ends are mentioned), the document it is in, and
# how many readable documents support the relation.
CURATION_RELATIONS_PAGE = (
    """
MATCH (a:Entity)-[r:RELATED]->(b:Entity)
WHERE ($status = '' OR coalesce(r.status, 'proposed') = $status)
  AND ($predicate = '' OR r.predicate = $predicate)
  AND ($entity = '' OR a.id = $entity OR b.id = $entity
       OR toLower(a.name) CONTAINS toLower($entity) OR toLower(b.name) CONTAINS toLower($entity))
  AND """
    + RELATION_READABLE
    + """
WITH a, r, b ORDER BY coalesce(r.weight, 0) DESC, a.name, r.predicate, b.name
WITH collect([a, r, b]) AS found
CALL (found) {
  UNWIND range(0, size(found[$skip..$skip + $limit]) - 1) AS i
  WITH i, found[$skip + i][0] AS a, found[$skip + i][1] AS r, found[$skip + i][2] AS b
  OPTIONAL CALL (a, r, b) {"""
    + RELATION_EVIDENCE
    + """    OPTIONAL MATCH (d:Document {id: u.document_id})
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
                  documents: """
    + RELATION_DOCUMENTS
    + """}) AS rows
}
RETURN size(found) AS total, rows
"""
)

CURATION_PREDICATES = "MATCH ()-[r:RELATED]->() RETURN DISTINCT r.predicate AS predicate ORDER BY predicate LIMIT 500"

# Whether the relation has a supporting document the reader can read (no row: no such relation).
CURATION_RELATION_READABLE = (
    """
MATCH (a:Entity {id: $source})-[r:RELATED {predicate: $predicate}]->(b:Entity {id: $target})
RETURN """
    + RELATION_READABLE
    + """ AS readable
"""
)

# What deleting a document removes (apps.ingest.services.document_delete): its units, and, read the
# way DOCUMENT_ENTITIES_RELEASE and DOCUMENT_RELATIONS_RELEASE write it, the entities and relations
# that only it supports (the others only lose its mentions and evidence).
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
WITH e, NOT EXISTS { MATCH (u)-[:MENTIONS]->(e) WHERE u.document_id <> $document_id } AS released
WITH e, released ORDER BY e.name, e.id
RETURN count(e) AS mentioned, count(CASE WHEN released THEN 1 END) AS released,
       collect(CASE WHEN released THEN e {.id, .name, .type} END)[..$limit] AS entities
"""

CURATION_DOCUMENT_RELATIONS_RELEASED = """
MATCH (a:Entity)-[ev:EVIDENCE {document: $document_id}]->(b:Entity)
MATCH (a)-[r:RELATED {predicate: ev.predicate}]->(b)
WITH a, r, b,
     EXISTS { MATCH (a)-[o:EVIDENCE {predicate: r.predicate}]->(b) WHERE o.document <> $document_id } AS kept
RETURN count(r) AS supported, count(CASE WHEN NOT kept THEN 1 END) AS released
"""
