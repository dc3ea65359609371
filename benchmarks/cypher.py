"""Cypher only the benchmarks send, each to a private benchmark database: Neo4j's own vector index
(``benchmarks/vector_search.py``) and the filler that grows a graph to 100k chunks
(``benchmarks/answer_corpus.py``, ``benchmarks/answer_latency.py``).
"""

from __future__ import annotations

from apps.graph.cypher import ANSWER_EXPAND

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


# --- answering benchmark: bulk filler for a 100k-chunk graph ------------------------------
# benchmarks/answer_latency.py ingests a real base corpus, then grows the graph to 100k chunks
# with filler shaped like ingested data: filler chunks copy a base chunk's text (server side),
# mention base entities and add evidence to relations (the ingest statement). Run only against the benchmark's
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

# Each relation once per unit in its evidence.
ANSWER_BENCH_RELATION_EVIDENCE = """
MATCH (a:Entity)-[ev:EVIDENCE]->(b:Entity)
UNWIND ev.units AS unit
RETURN unit, a.id AS source, b.id AS target, ev.predicate AS predicate
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

ANSWER_BENCH_RELATIONSHIP_COUNTS = "MATCH ()-[r]->() RETURN type(r) AS type, count(*) AS count ORDER BY type"

# The expansion statement itself, profiled (operators with their rows and db hits).
ANSWER_BENCH_EXPAND_PROFILE = "PROFILE " + ANSWER_EXPAND.lstrip()
