"""Stages 1 to 6 of answering a question, composed in plain Python, each timed and traced.

``retrieve`` runs query analysis, seeds (embed and vector search), graph expansion, rerank,
selection and prompt assembly; generation (stage 7) runs on the ``gpu`` worker
(``apps.answers.generation``). The external parts come in through ``RetrievalTools`` so
tests and benchmarks can run a stage alone or the whole chain.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from neo4j import Driver

from apps.answers.analysis import PendingEntities, Tokenize, query_analyse
from apps.answers.expansion import ExpansionParams, graph_expand
from apps.answers.lexical import LexicalParams, lexical_search, seeds_fuse
from apps.answers.linking import LinkedEntity, LinkParams, entities_link
from apps.answers.prompt import prompt_assemble
from apps.answers.ranker import Ranker, ranker_apply
from apps.answers.rerank import (
    BridgeParams,
    StoredVectors,
    attach_vectors,
    bridges_promote,
    rerank_apply,
    rerank_scores,
)
from apps.answers.scope import Scope, scope_names
from apps.answers.seeds import Search, SeedLimits, query_embed, seeds_search
from apps.answers.selection import SelectionParams, sources_select
from apps.answers.types import Candidate, Retrieval, Seeds
from apps.graph import cypher
from apps.graph.db import graph_read_timed
from apps.models.interfaces import ClipEmbedder, Reranker, TextEmbedder
from apps.observability.tracing import span_set, stage_span
from apps.vectors.spaces import spaces_used


@dataclass(frozen=True)
class RetrievalParams:
    seeds: SeedLimits = field(default_factory=SeedLimits)
    expansion: ExpansionParams = field(default_factory=ExpansionParams)
    selection: SelectionParams = field(default_factory=SelectionParams)
    rerank_pool: int = 80
    graph_weight: float = 0.5
    bridges: BridgeParams = field(default_factory=BridgeParams)
    lexical: LexicalParams = field(default_factory=LexicalParams)
    linking: LinkParams = field(default_factory=LinkParams)
    mode: str = "graph"  # or "dense": the seeds only, no expansion (nor lexical seeds)
    learned: bool = True  # graph mode: the learned ranker orders the pool (when tools carry one), not the weights


@dataclass
class RetrievalTools:
    driver: Driver
    text: TextEmbedder
    clip: ClipEmbedder | None
    reranker: Reranker | None  # None: cosine of the stored text vectors
    tokenize: Tokenize
    count_tokens: Callable[[str], int]
    search: Search
    stored_vectors: StoredVectors
    ner_model: str | None = None
    # The embedder of a text space ("text": ``text``; apps/vectors/spaces.py) and the text space of each
    # collection of a scope (None: every collection not in "text"); without them everything is in "text".
    space_embedder: Callable[[str], TextEmbedder] | None = None
    collection_spaces: Callable[[Sequence[str] | None], dict[str, str]] | None = None
    ranker: Ranker | None = None  # the learned ranker (apps.answers.ranker); None: the weights order

    def embedder(self, space: str) -> TextEmbedder:
        return self.text if space == "text" or self.space_embedder is None else self.space_embedder(space)


@dataclass
class _Clock:
    timings_ms: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str, **attributes: Any) -> Iterator[Any]:
        started = time.perf_counter()
        with stage_span(name, **attributes) as span:
            yield span
        self.timings_ms[name] = round((time.perf_counter() - started) * 1000, 3)


def _shortlist(candidates: dict[str, Candidate], size: int, lexical_weight: float) -> list[Candidate]:
    ranked = sorted(
        candidates.values(),
        key=lambda c: (-(max(c.graph_score, c.seed_score) + lexical_weight * c.lexical_score), c.node_id),
    )
    return ranked[:size]


def units_fetch(*, driver: Driver, candidates: list[Candidate], collections: Scope) -> list[Candidate]:
    """Fill in text, document and sentences; a unit the graph no longer has (or that lies
    outside ``collections``) is dropped."""
    rows = graph_read_timed(
        driver, cypher.ANSWER_UNITS, ids=[c.node_id for c in candidates], collections=scope_names(collections)
    )
    found = {row["id"]: row for row in rows}
    kept = []
    for candidate in candidates:
        record = found.get(candidate.node_id)
        if record is None:
            continue
        candidate.text = record["text"] or ""
        candidate.image_path = record["path"] or ""
        candidate.document_id = record["document_id"]
        candidate.document = record["document"] or ""
        candidate.collection = record["collection"] or ""
        starts, ends = record["sentence_starts"] or [], record["sentence_ends"] or []
        candidate.sentences = tuple(zip(starts, ends, strict=False))
        kept.append(candidate)
    return kept


def _expand(
    clock: _Clock,
    tools: RetrievalTools,
    params: RetrievalParams,
    seeds: Seeds,
    linked: Sequence[LinkedEntity],
    collections: Scope,
) -> tuple[list[Candidate], dict[str, Any]]:
    with clock.stage("graph_expansion", hops=params.expansion.hops, mode=params.mode) as span:
        if params.mode == "dense":
            found = {
                s.node_id: Candidate(s.node_id, s.label, seed_score=s.score, graph_score=s.score) for s in seeds.hits
            }
            stats: dict[str, Any] = {"rows": 0, "cypher_ms": 0.0, "entities": 0}
        else:
            expansion = graph_expand(
                driver=tools.driver,
                seeds=seeds.hits,
                entity_starts=[(entity.entity_id, entity.score) for entity in linked],
                collections=collections,
                params=params.expansion,
            )
            found = expansion.candidates
            stats = {"rows": expansion.rows, "cypher_ms": round(expansion.cypher_ms, 3), "entities": expansion.entities}
        started = time.perf_counter()
        shortlisted = units_fetch(
            driver=tools.driver,
            candidates=_shortlist(found, params.rerank_pool, params.lexical.weight),
            collections=collections,
        )
        stats["cypher_ms"] += round((time.perf_counter() - started) * 1000, 3)
        stats["reached"] = len(found)
        span_set(span, nodes_touched=len(found) + stats["entities"], cypher_ms=stats["cypher_ms"], rows=stats["rows"])
    return shortlisted, stats


def _link(
    clock: _Clock, tools: RetrievalTools, params: RetrievalParams, question: str, names: Sequence[str]
) -> list[LinkedEntity]:
    """The graph entities the question names (counted in the analysis stage: it is query analysis
    that needs the graph)."""
    if params.mode != "graph":
        return []
    started = time.perf_counter()
    linked = entities_link(
        driver=tools.driver, question=question, names=names, params=params.linking, embed=tools.text.embed_documents
    )
    clock.timings_ms["analysis"] += round((time.perf_counter() - started) * 1000, 3)
    return linked


def retrieve(*, question: str, collections: Scope, tools: RetrievalTools, params: RetrievalParams) -> Retrieval:
    """Stages 1 to 6 for one question, drawing only on ``collections`` (apps.answers.scope: an
    empty scope finds nothing, ``EVERY_COLLECTION`` is every collection, None is refused)."""
    names = scope_names(collections)  # refuses a scope that is not one, before any work
    clock = _Clock()
    with clock.stage("analysis") as span:
        pending = PendingEntities(question, model=tools.ner_model)
        analysis = query_analyse(question=question, tokenize=tools.tokenize, ner_model=None)
        span_set(span, language=analysis.language, tokens=len(analysis.tokens), entropy=analysis.entropy)
    spaces = {} if tools.collection_spaces is None else tools.collection_spaces(names)
    text_spaces = spaces_used(spaces, names)

    def space_of(collection: str) -> str:
        return spaces.get(collection, "text")

    with clock.stage("embed"):
        vectors = query_embed(
            question=question, texts={space: tools.embedder(space) for space in text_spaces}, clip=tools.clip
        )
    with clock.stage("vector_search", k=params.seeds.k_chunks) as span:
        hits = seeds_search(vectors=vectors, limits=params.seeds, collections=collections, search=tools.search)
        if params.mode == "graph" and params.lexical.k:
            found = lexical_search(
                driver=tools.driver, question=question, collections=collections, params=params.lexical
            )
            hits = seeds_fuse(
                dense=hits, lexical=found, query_vectors=vectors, stored_vectors=tools.stored_vectors, space_of=space_of
            )
        span_set(span, hits=len(hits))
    seeds = Seeds(text_vector=vectors[text_spaces[0]], hits=tuple(hits))
    # The entity names were found meanwhile in a helper thread; analysis counts its own time and this wait.
    waited = time.perf_counter()
    analysis = dataclasses.replace(analysis, entities=pending.result())
    clock.timings_ms["analysis"] += round((time.perf_counter() - waited) * 1000, 3)
    linked = _link(clock, tools, params, question, analysis.entities)
    analysis = dataclasses.replace(analysis, linked=tuple((entity.entity_id, entity.name) for entity in linked))
    shortlisted, stats = _expand(clock, tools, params, seeds, linked, collections)
    with clock.stage("rerank", k=len(shortlisted)):
        attach_vectors(shortlisted, tools.stored_vectors, lambda space: tools.embedder(space).embed_documents, space_of)
        scores = rerank_scores(
            question=question, query_vectors=vectors, candidates=shortlisted, reranker=tools.reranker
        )
        graph = params.mode == "graph"
        ranked = rerank_apply(
            shortlisted,
            scores,
            graph_weight=params.graph_weight if graph else 0.0,
            lexical_weight=params.lexical.weight if graph else 0.0,
        )
        if graph and params.learned and tools.ranker is not None:
            ranked = ranker_apply(question, ranked, tools.ranker)
        elif graph:
            ranked = bridges_promote(ranked, params.bridges)
    with clock.stage("selection") as span:
        sources, dropped = sources_select(candidates=ranked, entropy=analysis.entropy, params=params.selection)
        span_set(span, k=dropped["k"], selected=len(sources), duplicates=dropped["duplicates"])
    with clock.stage("assembly") as span:
        prompt = prompt_assemble(
            question=question,
            sources=sources,
            count_tokens=tools.count_tokens,
            budget=params.selection.context_tokens,
        )
        dropped["too_long"] = prompt.dropped
        span_set(span, tokens=prompt.tokens, too_long=prompt.dropped)
    return Retrieval(
        question=question,
        collections=None if names is None else tuple(names),
        analysis=analysis,
        seeds=seeds,
        candidates=ranked,
        sources=list(prompt.sources),
        prompt=prompt,
        timings_ms=clock.timings_ms,
        stats={**stats, **dropped},
    )
