"""Cypher fragments that several statements share, joined into them at import (no input involved).

A relation is a RELATED edge between the entities a and b (predicate, weight, status) and one EVIDENCE
edge beside it, in the same direction, per supporting document (predicate, document, collection, that
document's units). Each fragment names the relation r and its ends a and b (either way round).
"""

from __future__ import annotations

# The unit (chunk, row or image) u whose id is unit_id, as the body of a ``CALL (unit_id)`` subquery.
UNIT_OF_ID = """
    MATCH (u:Chunk {id: unit_id}) RETURN u
    UNION
    MATCH (u:Row {id: unit_id}) RETURN u
    UNION
    MATCH (u:Image {id: unit_id}) RETURN u
"""

# Some document supports r (a and b its start and end).
RELATION_SUPPORTED = "EXISTS { MATCH (a)-[:EVIDENCE {predicate: r.predicate}]->(b) }"

# A document of $collections (null: every collection) supports r.
RELATION_READABLE = """($collections IS NULL
     OR EXISTS { MATCH (a)-[ev:EVIDENCE {predicate: r.predicate}]-(b)
                 WHERE startNode(ev) = startNode(r) AND ev.collection IN $collections })"""

# How many documents of $collections (null: every collection) support r.
RELATION_DOCUMENTS = """COUNT { MATCH (a)-[ev:EVIDENCE {predicate: r.predicate}]-(b)
        WHERE startNode(ev) = startNode(r) AND ($collections IS NULL OR ev.collection IN $collections) }"""

# r's weight: how many units support it, in all documents (a and b its start and end).
RELATION_WEIGHT_SET = """SET r.weight = reduce(n = 0, k IN COLLECT {
  MATCH (a)-[ev:EVIDENCE {predicate: r.predicate}]->(b) RETURN size(ev.units) AS k
} | n + k)"""

# The evidence of r, as the body of a ``CALL (a, r, b)`` subquery: of the first five units of its
# evidence in $collections (null: every collection), those that mention both ends in one sentence (u,
# with the mentions m1 of a and m2 of b). Each statement returns what it shows of them.
RELATION_EVIDENCE = (
    """
  MATCH (a)-[ev:EVIDENCE {predicate: r.predicate}]-(b)
  WHERE startNode(ev) = startNode(r) AND ($collections IS NULL OR ev.collection IN $collections)
  WITH a, b, ev ORDER BY ev.document LIMIT 5
  UNWIND ev.units[..5] AS unit_id
  WITH a, b, unit_id LIMIT 5
  CALL (unit_id) {"""
    + UNIT_OF_ID
    + """  }
  WITH a, b, u
  MATCH (u)-[m1:MENTIONS]->(a)
  MATCH (u)-[m2:MENTIONS]->(b)
  WHERE m2.sentence = m1.sentence
"""
)
