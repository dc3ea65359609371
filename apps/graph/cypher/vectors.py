"""The graph nodes that carry FAISS vectors, read page by page to build and check the indexes
(``apps.vectors.graph``).
"""

from __future__ import annotations

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
