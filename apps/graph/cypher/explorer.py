"""What the graph explorer (``/graph/``, ``apps.graph.explore``, docs/graph.md) reads."""

from __future__ import annotations

from apps.graph.cypher.common import RELATION_DOCUMENTS, RELATION_EVIDENCE, RELATION_READABLE

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
GRAPH_NEIGHBOURS = (
    """
MATCH (a:Entity {id: $id})-[r:RELATED|SYNONYM]-(b:Entity)
WHERE b <> a AND coalesce(r.status, '') <> 'rejected'
  AND (type(r) = 'SYNONYM' OR """
    + RELATION_READABLE
    + """)
  AND ($types IS NULL OR b.type IN $types)
  AND ($relations IS NULL OR CASE type(r) WHEN 'SYNONYM' THEN 'synonym' ELSE r.predicate END IN $relations)
WITH b AS n,
     max(CASE type(r) WHEN 'SYNONYM' THEN coalesce(r.score, 0.0) ELSE toFloat(coalesce(r.weight, 0)) END) AS strength
WITH n, strength,
     COUNT { (n)<-[:MENTIONS]-(u) WHERE $collections IS NULL OR u.collection IN $collections } AS mentions
WHERE mentions > 0 OR $collections IS NULL
WITH n, strength, mentions ORDER BY strength DESC, mentions DESC, n.name, n.id
WITH collect({id: n.id, name: n.name, type: n.type, mentions: mentions}) AS rows
RETURN size(rows) AS total, rows[..$limit] AS rows
"""
)

# The shown edges among the entities $ids (each once), strongest first, with how many documents of
# $collections support each and one sentence of its evidence where both ends are mentioned.
GRAPH_EDGES = (
    """
UNWIND $ids AS id
MATCH (a:Entity {id: id})-[r:RELATED|SYNONYM]->(b:Entity)
WHERE b.id IN $ids AND a <> b AND coalesce(r.status, '') <> 'rejected'
  AND (type(r) = 'SYNONYM' OR """
    + RELATION_READABLE
    + """)
  AND ($relations IS NULL OR CASE type(r) WHEN 'SYNONYM' THEN 'synonym' ELSE r.predicate END IN $relations)
WITH a, r, b,
     CASE type(r) WHEN 'SYNONYM' THEN coalesce(r.score, 0.0) ELSE toFloat(coalesce(r.weight, 0)) END AS strength
ORDER BY strength DESC, a.id, b.id
LIMIT $limit
OPTIONAL CALL (a, r, b) {"""
    + RELATION_EVIDENCE
    + """  RETURN u.text AS evidence_text, u.sentence_starts[m1.sentence] AS evidence_start,
         u.sentence_ends[m1.sentence] AS evidence_end
  LIMIT 1
}
RETURN a.id AS source, b.id AS target, type(r) AS type,
       CASE type(r) WHEN 'SYNONYM' THEN 'synonym' ELSE r.predicate END AS kind, strength,
       coalesce(r.status, CASE type(r) WHEN 'SYNONYM' THEN 'suggested' ELSE 'proposed' END) AS status,
       """
    + RELATION_DOCUMENTS
    + """ AS documents,
       evidence_text, evidence_start, evidence_end
"""
)

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
GRAPH_PATH_PREDICATES = (
    """
UNWIND $pairs AS pair
MATCH (a:Entity {id: pair[0]})-[r:RELATED]-(b:Entity {id: pair[1]})
WHERE coalesce(r.status, '') <> 'rejected'
  AND """
    + RELATION_READABLE
    + """
WITH pair, r ORDER BY r.weight DESC
RETURN pair[0] AS source, pair[1] AS target, collect(r.predicate)[0] AS predicate
"""
)
