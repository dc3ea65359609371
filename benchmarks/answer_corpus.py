"""The answering benchmark's corpus: real passages ingested, then bulk filler up to N chunks.

Ingesting 100k passages through the real pipeline takes hours on a 2-core CPU (embedding is
about 14 passages per second), so ``corpus_build`` ingests a real base set (MuSiQue and
HotpotQA passages, with the real parser, NER, relations, embeddings and FAISS writes) and
then grows the graph with filler shaped like ingested data:

- filler documents of 1-8 chunks, in the base collection, chunks linked by NEXT;
- each filler chunk copies the text (and sentence offsets) of a random base chunk;
- it mentions 2-5 entities: the source chunk's own, drawn with a Zipf-like skew towards
  entities that are common in the base graph (rank r weighs 1 / r ** zipf), topped up from
  all entities with the same skew when the source names too few;
- RELATED edges of the source chunk between kept entities gain the filler chunk as evidence
  (weight = evidence count, as ingestion sets it); a topped-up entity co-occurs with the first
  kept one;
- its vector is the source chunk's stored vector plus Gaussian noise, renormalised, added to
  the text space through ``apps.vectors.services.vectors_add``.

Bench-only Cypher: ``ANSWER_BENCH_*`` in benchmarks/cypher.py. Only for the private benchmark
database (var/bench-answers).
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from django.conf import settings
from neo4j import Driver

from apps.graph import cypher
from apps.graph.identity import content_id
from apps.ingest import corpora
from apps.ingest.graph_build import CO_OCCURS
from apps.ingest.services import FAILED, default_extractor, uploads_ingest
from apps.ingest.timing import StageTimer
from apps.vectors.services import vectors_add, vectors_get, vectors_info
from apps.vectors.types import VectorItem
from benchmarks import cypher as bench_cypher

Row = dict[str, Any]
HOW = (
    "Base passages ingested with the real pipeline (parse, spaCy NER and relations, MiniLM embeddings, FAISS). "
    "Filler up to the target: documents of 1-8 chunks in the same collection linked by NEXT; each filler chunk "
    "copies a random base chunk's text and sentence offsets, mentions 2-5 of its entities drawn with a Zipf-like "
    "skew towards entities common in the base graph (topped up from all entities with the same skew when the "
    "source names too few), adds itself as evidence to the source's RELATED edges between kept entities "
    "(topped-up entities co-occur with the first kept one), and gets the source's stored vector plus Gaussian "
    "noise, renormalised, added to the text space with vectors_add."
)
Relation = tuple[str, str, str]  # source, target, predicate


@dataclass(frozen=True)
class FillerParams:
    target_chunks: int
    collection: str
    noise: float = 0.02  # per-dimension sigma: cosine to the source vector about 0.93 at 384 dimensions
    zipf: float = 1.0
    mentions: tuple[int, int] = (2, 5)
    document_chunks: tuple[int, int] = (1, 8)
    batch: int = 10_000
    seed: int = 0
    start_chunks: int = 0  # chunks the graph holds already (0: only the base); the filler adds the rest
    first_document: int = 0  # number of the first filler document (a graph grown in steps: the next free one)


@dataclass(frozen=True)
class BaseChunk:
    id: str
    document_id: str
    title: str
    chars: int
    mentions: tuple[Row, ...]  # {entity, start, end, sentence}


@dataclass
class FillerPlan:
    documents: list[Row] = field(default_factory=list)
    chunks: list[Row] = field(default_factory=list)  # id, document_id, collection, source, ord
    next_links: list[Row] = field(default_factory=list)
    mentions: list[Row] = field(default_factory=list)
    entity_documents: dict[str, dict[str, None]] = field(default_factory=lambda: defaultdict(dict))
    relations: dict[Relation, dict[str, list[str]]] = field(default_factory=dict)  # document -> units
    new_relations: int = 0


# --- base: the real pipeline ---------------------------------------------------------------


def base_files(data_dir: Path, *, musique: int | None, hotpotqa: int | None) -> list[tuple[str, bytes]]:
    return [
        *list(corpora.musique_passages(data_dir))[:musique],
        *list(corpora.hotpotqa_passages(data_dir))[:hotpotqa],
    ]


def base_ingest(*, driver: Driver, files: Sequence[tuple[str, bytes]], collection: str) -> dict[str, Any]:
    """Ingest the base passages with the real pipeline (parse, NER, relations, embed, FAISS)."""
    timer = StageTimer()
    started = time.perf_counter()
    outcomes = uploads_ingest(
        driver=driver, uploads=files, collection=collection, extractor=default_extractor(), timer=timer
    )
    seconds = time.perf_counter() - started
    failures = [o for o in outcomes if o.status == FAILED]
    return {
        "passages": len(files),
        "failures": len(failures),
        "failure_examples": [f"{o.path}: {o.error}" for o in failures[:3]],
        "chunks": sum(o.counts.get("chunks", 0) for o in outcomes),
        "seconds": round(seconds, 1),
        "passages_per_second": round(len(files) / seconds, 2) if seconds else None,
        "stage_seconds": {stage: round(value, 1) for stage, value in sorted(timer.seconds.items())},
    }


def base_read(*, driver: Driver, collection: str) -> tuple[list[BaseChunk], dict[str, int], dict[str, list[Relation]]]:
    """The base chunks with their mentions, every entity's degree, and each unit's relations."""
    records, _, _ = driver.execute_query(bench_cypher.ANSWER_BENCH_BASE_CHUNKS, collection=collection, routing_="r")
    chunks = [
        BaseChunk(r["id"], r["document_id"], r["title"] or r["path"] or "", r["chars"] or 0, tuple(r["mentions"]))
        for r in records
    ]
    records, _, _ = driver.execute_query(bench_cypher.ANSWER_BENCH_ENTITY_DEGREES, routing_="r")
    degrees = {r["id"]: r["degree"] for r in records}
    records, _, _ = driver.execute_query(bench_cypher.ANSWER_BENCH_RELATION_EVIDENCE, routing_="r")
    evidence: dict[str, list[Relation]] = defaultdict(list)
    for r in records:
        evidence[r["unit"]].append((r["source"], r["target"], r["predicate"]))
    return chunks, degrees, evidence


# --- filler plan (pure: seeded, no I/O) ---------------------------------------------------


class _Skew:
    """Zipf-like weights over entities ranked by base degree (most mentioned first)."""

    def __init__(self, degrees: dict[str, int], exponent: float, rng: np.random.Generator) -> None:
        ranked = sorted(degrees, key=lambda e: (-degrees[e], e))
        self.rank = {entity: rank for rank, entity in enumerate(ranked, start=1)}
        self.entities = ranked
        weights = 1.0 / np.arange(1, len(ranked) + 1, dtype=np.float64) ** exponent
        self.cdf = np.cumsum(weights / weights.sum())
        self.exponent = exponent
        self.rng = rng
        self._weights: dict[str, npt.NDArray[np.float64]] = {}

    def weights(self, chunk: BaseChunk) -> npt.NDArray[np.float64]:
        """The Zipf weight of each of the chunk's mentions (cached: a base chunk is copied many times)."""
        if chunk.id not in self._weights:
            ranks = np.array([self.rank.get(m["entity"], len(self.rank) + 1) for m in chunk.mentions], np.float64)
            self._weights[chunk.id] = ranks**-self.exponent
        return self._weights[chunk.id]

    def draw(self) -> str:
        position = int(np.searchsorted(self.cdf, self.rng.random() * self.cdf[-1]))
        return self.entities[min(position, len(self.entities) - 1)]


def _chunk_entities(source: BaseChunk, k: int, skew: _Skew, rng: np.random.Generator) -> tuple[list[Row], list[str]]:
    """The source's mentions kept (skewed towards common entities) and the topped-up entities."""
    kept: list[Row] = []
    if source.mentions:
        # Weighted sampling without replacement (Efraimidis-Spirakis): the k largest u ** (1 / w).
        weights = skew.weights(source)
        keys = np.log(rng.random(len(weights))) / weights
        kept = [source.mentions[i] for i in sorted(np.argsort(-keys)[:k].tolist())]
    chosen = {m["entity"] for m in kept}
    topped: list[str] = []
    for _ in range(50):  # a few tries; the top of a Zipf draw repeats often
        if len(chosen) >= k or len(chosen) >= len(skew.entities):
            break
        entity = skew.draw()
        if entity not in chosen:
            chosen.add(entity)
            topped.append(entity)
    return kept, topped


def _relate(plan: FillerPlan, key: Relation, chunk_id: str, document_id: str) -> None:
    plan.relations.setdefault(key, {}).setdefault(document_id, []).append(chunk_id)


def _add_chunk(
    plan: FillerPlan,
    *,
    chunk: Row,
    source: BaseChunk,
    evidence: dict[str, list[Relation]],
    skew: _Skew,
    params: FillerParams,
    rng: np.random.Generator,
) -> None:
    chunk_id, document_id = chunk["id"], chunk["document_id"]
    k = int(rng.integers(params.mentions[0], params.mentions[1] + 1))
    kept, topped = _chunk_entities(source, k, skew, rng)
    for m in kept:
        plan.mentions.append({"unit": chunk_id, **m})
    for entity in topped:
        plan.mentions.append({"unit": chunk_id, "entity": entity, "start": None, "end": None, "sentence": 0})
    names = [m["entity"] for m in kept] + topped
    for entity in names:
        plan.entity_documents[entity][document_id] = None
    kept_names = set(names[: len(kept)])
    for key in evidence.get(source.id, ()):
        if key[0] in kept_names and key[1] in kept_names:
            _relate(plan, key, chunk_id, document_id)
    anchor = names[0] if names else None
    for entity in topped:
        if anchor is not None and entity != anchor:
            source_id, target_id = sorted((anchor, entity))
            _relate(plan, (source_id, target_id, CO_OCCURS), chunk_id, document_id)


def filler_plan(
    *, base: Sequence[BaseChunk], degrees: dict[str, int], evidence: dict[str, list[Relation]], params: FillerParams
) -> FillerPlan:
    """Documents, chunks, NEXT links, mentions, entity documents and RELATED evidence of the filler."""
    rng = np.random.default_rng(params.seed)
    skew = _Skew(degrees, params.zipf, rng)
    plan = FillerPlan()
    wanted = params.target_chunks - (params.start_chunks or len(base))
    number = params.first_document
    while len(plan.chunks) < wanted:
        low, high = params.document_chunks
        size = min(int(rng.integers(low, high + 1)), wanted - len(plan.chunks))
        sources = [base[int(i)] for i in rng.integers(len(base), size=size)]
        document_id = content_id("bench-filler-document", str(number))
        title = f"{sources[0].title} (bench copy {number})"
        plan.documents.append(
            {
                "id": document_id,
                "title": title,
                "path": f"bench-filler/{corpora.safe_name(title)}.txt",
                "mime": "text/plain",
                "sha256": content_id("bench-filler-sha256", str(number)) * 2,
                "collection": params.collection,
                "size": sum(s.chars for s in sources),
            }
        )
        chunk_ids = [content_id("bench-filler-chunk", document_id, str(ord_)) for ord_ in range(size)]
        for ord_, (chunk_id, source) in enumerate(zip(chunk_ids, sources, strict=True)):
            chunk = {
                "id": chunk_id,
                "document_id": document_id,
                "collection": params.collection,
                "source": source.id,
                "ord": ord_,
            }
            plan.chunks.append(chunk)
            _add_chunk(plan, chunk=chunk, source=source, evidence=evidence, skew=skew, params=params, rng=rng)
        plan.next_links += [{"source": a, "target": b} for a, b in itertools.pairwise(chunk_ids)]
        number += 1
    known = {key for keys in evidence.values() for key in keys}
    plan.new_relations = sum(key not in known for key in plan.relations)
    return plan


# --- writing ----------------------------------------------------------------------------------


def _batches(rows: Sequence[Row], limit: int, weight: Callable[[Row], int] = lambda _row: 1) -> Iterator[list[Row]]:
    batch: list[Row] = []
    total = 0
    for row in rows:
        batch.append(row)
        total += weight(row)
        if total >= limit:
            yield batch
            batch, total = [], 0
    if batch:
        yield batch


def _write(
    driver: Driver, query: str, rows: Sequence[Row], limit: int, weight: Callable[[Row], int] | None = None
) -> float:
    started = time.perf_counter()
    for batch in _batches(rows, limit, weight or (lambda _row: 1)):
        driver.execute_query(query, rows=batch)
    return round(time.perf_counter() - started, 1)


def plan_write(*, driver: Driver, plan: FillerPlan, batch: int) -> dict[str, float]:
    """The filler into Neo4j with bulk UNWIND statements; seconds per step."""
    collection = plan.documents[0]["collection"] if plan.documents else ""
    relation_rows = [
        {"source": s, "target": t, "predicate": p, "evidence": units, "document_id": doc, "collection": collection}
        for (s, t, p), documents in plan.relations.items()
        for doc, units in documents.items()
    ]
    return {
        "documents": _write(driver, cypher.DOCUMENTS_CREATE, plan.documents, batch),
        "chunks": _write(driver, bench_cypher.ANSWER_BENCH_CHUNKS_COPY, plan.chunks, batch),
        "next": _write(driver, cypher.CHUNKS_LINK_NEXT, plan.next_links, batch * 2),
        "mentions": _write(driver, cypher.mentions_create("Chunk"), plan.mentions, batch * 2),
        "relations": _write(driver, cypher.RELATIONS_MERGE, relation_rows, batch * 5, lambda r: 1 + len(r["evidence"])),
    }


def filler_vectors(
    *, plan: FillerPlan, base_vectors: dict[str, npt.NDArray[np.float32]], noise: float, seed: int
) -> npt.NDArray[np.float32]:
    """Each filler chunk's vector: its source's stored vector plus N(0, noise^2) per dimension, renormalised."""
    rng = np.random.default_rng(seed + 1)
    dim = len(next(iter(base_vectors.values()))) if base_vectors else 0
    x = np.empty((len(plan.chunks), dim), dtype=np.float32)
    for start in range(0, len(plan.chunks), 100_000):  # in parts: a million rows of float64 noise is 3 GB
        part = np.stack([base_vectors[chunk["source"]] for chunk in plan.chunks[start : start + 100_000]])
        part = part.astype(np.float32) + rng.normal(0.0, noise, size=part.shape).astype(np.float32)
        x[start : start + len(part)] = part / np.linalg.norm(part, axis=1, keepdims=True)
    return x


# --- the whole build -------------------------------------------------------------------------


def degree_shape(driver: Driver, max_degree: int) -> dict[str, Any]:
    records, _, _ = driver.execute_query(bench_cypher.ANSWER_BENCH_ENTITY_DEGREES, routing_="r")
    degrees = np.array([r["degree"] for r in records] or [0])
    return {
        "entities": len(records),
        "mentions_per_entity_p50": float(np.percentile(degrees, 50)),
        "p90": float(np.percentile(degrees, 90)),
        "p99": float(np.percentile(degrees, 99)),
        "max": int(degrees.max()),
        f"over_max_degree_{max_degree}": int((degrees > max_degree).sum()),
    }


def graph_counts(driver: Driver) -> dict[str, dict[str, int]]:
    nodes, _, _ = driver.execute_query(cypher.COUNT_NODES_BY_LABEL, routing_="r")
    edges, _, _ = driver.execute_query(bench_cypher.ANSWER_BENCH_RELATIONSHIP_COUNTS, routing_="r")
    return {
        "nodes": {r["label"]: r["count"] for r in nodes},
        "relationships": {r["type"]: r["count"] for r in edges},
    }


@dataclass
class Base:
    """The ingested base and what the filler copies from it."""

    report: dict[str, Any]
    chunks: list[BaseChunk]
    degrees: dict[str, int]
    evidence: dict[str, list[Relation]]
    vectors: dict[str, npt.NDArray[np.float32]]
    graph: dict[str, dict[str, int]]


def base_build(
    *, driver: Driver, files: Sequence[tuple[str, bytes]], collection: str, log: Callable[[str], None]
) -> Base:
    """Ingest ``files`` for real and read back what the filler copies."""
    log(f"ingesting {len(files)} base passages with the real pipeline")
    report = base_ingest(driver=driver, files=files, collection=collection)
    log(f"base ingested: {report}")
    chunks, degrees, evidence = base_read(driver=driver, collection=collection)
    vectors = vectors_get(space="text", node_ids=[chunk.id for chunk in chunks])
    chunks = [chunk for chunk in chunks if chunk.id in vectors]
    return Base(report, chunks, degrees, evidence, vectors, graph_counts(driver))


def filler_grow(*, driver: Driver, base: Base, params: FillerParams, log: Callable[[str], None]) -> dict[str, Any]:
    """Add filler up to ``params.target_chunks`` (Neo4j, then FAISS); what was added, and the seconds."""
    started = time.perf_counter()
    plan = filler_plan(base=base.chunks, degrees=base.degrees, evidence=base.evidence, params=params)
    plan_seconds = time.perf_counter() - started
    log(f"filler planned: {len(plan.chunks)} chunks in {len(plan.documents)} documents, {len(plan.mentions)} mentions")
    write_seconds = plan_write(driver=driver, plan=plan, batch=params.batch)
    log(f"filler written to Neo4j: {write_seconds}")
    started = time.perf_counter()
    vectors = filler_vectors(plan=plan, base_vectors=base.vectors, noise=params.noise, seed=params.seed)
    items = [VectorItem(chunk["id"], "Chunk", params.collection) for chunk in plan.chunks]
    if items:
        vectors_add(space="text", items=items, vectors=vectors)
    vector_seconds = time.perf_counter() - started
    log(f"filler vectors added in {vector_seconds:.1f} s")
    return {
        "chunks": len(plan.chunks),
        "documents": len(plan.documents),
        "next_links": len(plan.next_links),
        "mentions": len(plan.mentions),
        "entities_mentioned": len(plan.entity_documents),
        "related_edges_touched": len(plan.relations),
        "related_edges_new": plan.new_relations,
        "params": {
            "noise_sigma": params.noise,
            "zipf_exponent": params.zipf,
            "mentions_per_chunk": list(params.mentions),
            "chunks_per_document": list(params.document_chunks),
            "unwind_batch": params.batch,
            "seed": params.seed,
        },
        "seconds": {
            "read_and_plan": round(plan_seconds, 1),
            **{f"neo4j_{step}": value for step, value in write_seconds.items()},
            "faiss_add_and_save": round(vector_seconds, 1),
        },
    }


def text_index_info() -> dict[str, Any]:
    info = vectors_info(space="text")
    return {key: info.get(key) for key in ("index_type", "count", "dimension", "model", "tombstones", "version")} | {
        "hnsw_m": settings.VECTORS_HNSW_M,
        "ef_construction": settings.VECTORS_HNSW_EF_CONSTRUCTION,
        "ef_search": settings.VECTORS_HNSW_EF_SEARCH,
    }


def corpus_build(
    *, driver: Driver, files: Sequence[tuple[str, bytes]], params: FillerParams, log: Callable[[str], None]
) -> dict[str, Any]:
    """Ingest ``files`` for real, then add filler up to ``params.target_chunks``; what was built, and how."""
    base = base_build(driver=driver, files=files, collection=params.collection, log=log)
    filler = filler_grow(driver=driver, base=base, params=params, log=log)
    return {
        "how": HOW,
        "collection": params.collection,
        "base": {**base.report, "graph": base.graph},
        "filler": filler,
        "graph": graph_counts(driver),
        "entity_degrees": degree_shape(driver, settings.ANSWER_MAX_DEGREE),
        "text_index": text_index_info(),
    }
