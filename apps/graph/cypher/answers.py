"""Answering (``apps.answers``): the multi-hop expansion from the seeds, lexical seeds, entity linking,
the chosen units' details, and the search page's extras (names along an answer's paths, image files).
"""

from __future__ import annotations

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
           OR EXISTS { MATCH (e)-[ev:EVIDENCE {predicate: r.predicate}]-(other)
                       WHERE startNode(ev) = startNode(r) AND ev.collection IN $collections }
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

# The lexical seed channel: Lucene's BM25 over the text of chunks, rows and images ($index:
# unit_text_fulltext, or unit_cjk_fulltext for a question in Chinese, Japanese or Korean; kept
# up to date by Neo4j as units are written and deleted). The index spans every collection, so it is
# asked for $limit hits and the first $k in $collections are kept.
ANSWER_LEXICAL = """
CALL db.index.fulltext.queryNodes($index, $query, {limit: $limit}) YIELD node, score
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
