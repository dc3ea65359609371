"""Cypher fragments that several statements share, joined into them at import (no input involved)."""

from __future__ import annotations

# The evidence of the RELATED edge r between the entities a and b, as the body of a ``CALL (a, r, b)``
# subquery: of the first five units in its evidence list, those of $collections (null: every collection)
# that mention both ends in one sentence (u, with the mentions m1 of a and m2 of b). Each statement
# returns what it shows of them.
RELATION_EVIDENCE = """
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
"""
