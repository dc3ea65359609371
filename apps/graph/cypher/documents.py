"""What the document viewer reads (``apps.documents``, docs/search.md)."""

from __future__ import annotations

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
       coalesce(d.language, '') AS language, COUNT { (d)-[:HAS_CHUNK]->() } AS chunks,
       COUNT { (d)-[:HAS_TABLE]->() } AS tables, COUNT { (d)-[:HAS_IMAGE]->() } AS images
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
