"""Curation's writes (``apps.curation.services``), each one logged change that the change log replays
(``apps.ledger.graph.OPERATIONS``): applying one twice changes nothing more.
"""

from __future__ import annotations

from apps.graph.cypher.common import RELATION_SUPPORTED, RELATION_WEIGHT_SET

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

# Move the relation old (from oa to ob) to the relation a-b with predicate, taking its evidence in
# documents (null: all of it): a-b (same direction, old's status unless it has one) takes the evidence
# edges, both weights are counted again, and old goes when no evidence is left to it. The body of a
# ``CALL (old, oa, ob, a, b, documents, predicate)`` subquery (the old weight is counted apart from
# RELATION_WEIGHT_SET because a subquery cannot rebind its imported a, r, b).
RELATION_MOVE = (
    """
  MERGE (a)-[r:RELATED {predicate: predicate}]->(b)
  SET r.status = coalesce(r.status, old.status)
  WITH old, oa, ob, a, r, b, documents, predicate
  CALL (old, oa, ob, a, b, documents, predicate) {
    MATCH (oa)-[ev:EVIDENCE {predicate: old.predicate}]->(ob)
    WHERE documents IS NULL OR ev.document IN documents
    MERGE (a)-[moved:EVIDENCE {predicate: predicate, document: ev.document}]->(b)
    ON CREATE SET moved.collection = ev.collection, moved.units = []
    SET moved.units = moved.units + [x IN ev.units WHERE NOT x IN moved.units]
    DELETE ev
  }
  WITH old, oa, ob, a, r, b
  """
    + RELATION_WEIGHT_SET
    + """
  WITH old, oa, ob
  SET old.weight = reduce(n = 0, k IN COLLECT {
    MATCH (oa)-[ev:EVIDENCE {predicate: old.predicate}]->(ob) RETURN size(ev.units) AS k
  } | n + k)
  WITH old, oa, ob WHERE NOT EXISTS { MATCH (oa)-[:EVIDENCE {predicate: old.predicate}]->(ob) }
  DELETE old
"""
)

# Mentions and relations of $drop move to $keep; its names become aliases of $keep; $drop goes.
# A relation keeps its direction: $drop's end of it becomes $keep.
ENTITY_MERGE = (
    """
MATCH (keep:Entity {id: $keep}), (drop:Entity {id: $drop})
WHERE keep <> drop
CALL (keep, drop) {
  MATCH (u)-[m:MENTIONS]->(drop)
  CREATE (u)-[:MENTIONS {start: m.start, end: m.end, sentence: m.sentence}]->(keep)
  DELETE m
}
CALL (keep, drop) {
  MATCH (drop)-[old:RELATED]-(other:Entity) WHERE other <> keep
  WITH old, startNode(old) AS oa, endNode(old) AS ob,
       CASE WHEN startNode(old) = drop THEN [keep, other] ELSE [other, keep] END AS ends
  WITH old, oa, ob, ends[0] AS a, ends[1] AS b, null AS documents, old.predicate AS predicate
  CALL (old, oa, ob, a, b, documents, predicate) {"""
    + RELATION_MOVE
    + """  }
}
SET keep.aliases = keep.aliases + [a IN [drop.name] + drop.aliases WHERE a <> keep.name AND NOT a IN keep.aliases]
SET keep.aliases_text = reduce(s = keep.name, a IN keep.aliases | s + ' ' + a)
DETACH DELETE drop
RETURN keep.id AS id
"""
)

# What undoing a merge of $drop into $keep needs, read just before the merge: $drop's properties,
# mentions (with the unit's label), relations with their evidence edges (and the units the merge adds
# to $keep's counterpart, or that it creates one) and synonym edges, and $keep's names.
ENTITY_MERGE_SNAPSHOT = """
MATCH (keep:Entity {id: $keep}), (drop:Entity {id: $drop})
RETURN properties(drop) AS properties, keep.name AS keep_name, keep.aliases AS keep_aliases,
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
                 status: n.status,
                 evidence: COLLECT {
                   MATCH (drop)-[ev:EVIDENCE {predicate: r.predicate}]-(other) WHERE startNode(ev) = startNode(r)
                   OPTIONAL MATCH (keep)-[k:EVIDENCE {predicate: r.predicate, document: ev.document}]-(other)
                   WHERE n IS NOT NULL AND startNode(k) = startNode(n)
                   RETURN {properties: properties(ev), added: [x IN ev.units WHERE NOT x IN coalesce(k.units, [])]}
                 }}
       } AS relations,
       COLLECT {
         MATCH (drop)-[s:SYNONYM]-(other)
         RETURN {other: other.id, outgoing: startNode(s) = drop, properties: properties(s)}
       } AS synonyms
"""

# Undo a merge from its snapshot: $drop comes back with its properties, name vector, mentions,
# relations (with their evidence edges) and synonym edges; what the merge added to $keep (names,
# relation evidence, relations it created) goes. What $keep gained since from elsewhere stays. Idempotent.
ENTITY_UNMERGE = (
    """
MATCH (keep:Entity {id: $keep})
MERGE (drop:Entity {id: $drop})
WITH keep, drop, coalesce(drop.aliases, []) AS had_aliases
SET drop += $properties
SET drop.aliases = had_aliases + [a IN $properties.aliases WHERE NOT a IN had_aliases]
SET drop.aliases_text = reduce(s = drop.name, a IN drop.aliases | s + ' ' + a)
SET keep.aliases = [a IN keep.aliases WHERE NOT a IN $keep_aliases_added]
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
    WITH rel, source, target
    UNWIND rel.evidence AS ev
    MERGE (source)-[e:EVIDENCE {predicate: ev.properties.predicate, document: ev.properties.document}]->(target)
    SET e += ev.properties
  }
  CALL (keep, other, rel) {
    WITH keep, other, rel WHERE other <> keep
    WITH rel, CASE WHEN rel.outgoing THEN [keep, other] ELSE [other, keep] END AS ends
    WITH rel, ends[0] AS a, ends[1] AS b
    MATCH (a)-[r:RELATED {predicate: rel.properties.predicate}]->(b)
    SET r.status = CASE WHEN rel.created THEN r.status ELSE rel.status END
    WITH rel, a, r, b
    CALL (rel, a, b) {
      UNWIND rel.evidence AS ev
      MATCH (a)-[k:EVIDENCE {predicate: ev.properties.predicate, document: ev.properties.document}]->(b)
      SET k.units = [x IN k.units WHERE NOT x IN ev.added]
      WITH k WHERE size(k.units) = 0
      DELETE k
    }
    """
    + RELATION_WEIGHT_SET
    + """
    WITH rel, a, r, b WHERE rel.created AND NOT """
    + RELATION_SUPPORTED
    + """
    DELETE r
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
)

ENTITY_DELETE = "MATCH (e:Entity {id: $id}) DETACH DELETE e RETURN count(*) AS deleted"

RELATION_STATUS_SET = """
MATCH (:Entity {id: $source})-[r:RELATED {predicate: $predicate}]->(:Entity {id: $target})
SET r.status = $status
RETURN count(r) AS updated
"""

RELATION_DELETE = """
MATCH (a:Entity {id: $source})-[r:RELATED {predicate: $predicate}]->(b:Entity {id: $target})
CALL (a, r, b) {
  MATCH (a)-[ev:EVIDENCE {predicate: r.predicate}]->(b)
  DELETE ev
}
DELETE r
RETURN count(*) AS deleted
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
# $type), with its relations' evidence in those documents; relations left without evidence go.
ENTITY_SPLIT = (
    """
MATCH (e:Entity {id: $id})
MERGE (n:Entity {id: $new_id})
ON CREATE SET n.name = $name, n.type = $type, n.aliases = [], n.aliases_text = $name
WITH e, n
CALL (e, n) {
  MATCH (u)-[m:MENTIONS]->(e) WHERE u.document_id IN $documents
  CREATE (u)-[:MENTIONS {start: m.start, end: m.end, sentence: m.sentence}]->(n)
  DELETE m
}
CALL (e, n) {
  MATCH (e)-[old:RELATED]-(other:Entity)
  WHERE other <> n
    AND EXISTS { MATCH (e)-[ev:EVIDENCE {predicate: old.predicate}]-(other)
                 WHERE startNode(ev) = startNode(old) AND ev.document IN $documents }
  WITH old, startNode(old) AS oa, endNode(old) AS ob,
       CASE WHEN startNode(old) = e THEN [n, other] ELSE [other, n] END AS ends
  WITH old, oa, ob, ends[0] AS a, ends[1] AS b, $documents AS documents, old.predicate AS predicate
  CALL (old, oa, ob, a, b, documents, predicate) {"""
    + RELATION_MOVE
    + """  }
}
RETURN n.id AS id
"""
)

# The predicate is part of the relation's MERGE key, so a new predicate is a new relationship
# with the old one's status and evidence edges; the old one goes.
RELATION_PREDICATE_SET = (
    """
MATCH (a:Entity {id: $source})-[old:RELATED {predicate: $predicate}]->(b:Entity {id: $target})
WITH old, a AS oa, b AS ob, a, b, null AS documents, $new_predicate AS predicate
CALL (old, oa, ob, a, b, documents, predicate) {"""
    + RELATION_MOVE
    + """}
RETURN count(*) AS moved
"""
)
