"""Curation's writes (``apps.curation.services``), each one logged change that the change log replays
(``apps.ledger.graph.OPERATIONS``): applying one twice changes nothing more.
"""

from __future__ import annotations

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
