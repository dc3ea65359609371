"""Stage 3, multi-hop expansion: from the seeds and the question's entities through the graph.

One Cypher round trip (``cypher.ANSWER_EXPAND``) returns every path, grouped by start and entity: seed unit -MENTIONS->
entity [-RELATED|SYNONYM- entity] <-MENTIONS- unit (2 or 3 hops), question entity [-RELATED|SYNONYM-
entity] <-MENTIONS- unit (1 or 2 hops) and seed chunk -NEXT- chunk (1 hop). A path scores

    start score x specificity of each entity crossed x RELATED strength x decay ** hops

where an entity's specificity is ``1 / log2(1 + mentions)`` (a name mentioned once links
strongly, a common one weakly), a RELATED edge with ``w`` pieces of evidence counts
``w / (w + 1)`` and a SYNONYM edge (two names whose embeddings are close) its score. A unit's
graph score combines its paths as a noisy-or, so several independent paths count more than one;
a seed's own similarity is its zero-hop path, and the support score is the noisy-or of the other
paths (what the graph adds to the similarity). With ``scoring="ppr"`` the graph score is instead
a personalized PageRank over the retrieved subgraph, restarted at the seeds in proportion to
their similarity.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from neo4j import Driver

from apps.answers.ppr import personalized_pagerank
from apps.answers.scope import Scope, scope_names
from apps.answers.types import Candidate, GraphPath, Seed
from apps.graph import cypher
from apps.graph.db import graph_read_timed
from apps.graph.identity import entity_id, entity_key

# Entity groups a question's names are looked up in (a question's NER label is often not the
# one the passage got: "Paris" may be a GPE in one and a PERSON in the other).
NAME_GROUPS = ("PERSON", "GPE", "ORG", "NORP", "WORK_OF_ART", "EVENT", "LAW", "LANGUAGE")


@dataclass(frozen=True)
class ExpansionParams:
    hops: int = 3
    fanout: int = 8
    related_fanout: int = 4
    max_entities: int = 40
    max_degree: int = 500
    decay: float = 0.5
    scoring: str = "paths"  # or "ppr"
    ppr_damping: float = 0.5
    skip_types: tuple[str, ...] = ()
    body_weight: float = 0.5  # a unit naming the entity only after its first sentence is less about it
    synonym_min_score: float = 0.9  # SYNONYM edges scoring below this are not crossed (above 1: none are)


@dataclass
class Expansion:
    candidates: dict[str, Candidate]
    rows: int
    cypher_ms: float
    entities: int


def question_entity_ids(names: Iterable[str]) -> list[str]:
    """The graph ids a question's entity names may have (one per entity group)."""
    return list(dict.fromkeys(entity_id(entity_key(name, group)) for name in names for group in NAME_GROUPS))


def specificity(degree: int) -> float:
    return 1.0 / math.log2(1 + max(1, degree))


def _group_weight(row: dict[str, Any]) -> float:
    """What the entity (and the RELATED step, when there is one) contribute to a group's paths."""
    weight = specificity(row["degree"])
    if row["related"] is not None:
        weight *= specificity(row["via_degree"]) * row["weight"] / (row["weight"] + 1)
    return weight


def _group_shape(row: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The nodes before the unit and the relationships of a group's paths."""
    if row["entity"] is None:  # seed chunk -NEXT- chunk
        return (row["start"],), ("NEXT",)
    nodes: tuple[str, ...] = (row["entity"],) if row["related"] is None else (row["entity"], row["related"])
    step = row.get("step") or "RELATED"
    relationships: tuple[str, ...] = ("MENTIONS",) if row["related"] is None else (step, "MENTIONS")
    if row["start"] is not None:
        nodes, relationships = (row["start"], *nodes), ("MENTIONS", *relationships)
    return nodes, relationships


def group_paths(row: dict[str, Any], decay: float, body_weight: float) -> Iterator[tuple[str, str, GraphPath]]:
    """(unit, label, path) for each unit of one expansion row: the units reached from one start
    through one entity (and one RELATED step). A path scores the start's score x the entity's
    specificity (x the RELATED step's) x ``body_weight`` when the unit names the entity only after
    its first sentence x ``decay`` per hop; a NEXT neighbour scores the start's score x ``decay``."""
    nodes, relationships = _group_shape(row)
    base = row["start_score"] * decay ** len(relationships)
    if row["entity"] is not None:
        base *= _group_weight(row)
    labels = row["labels"] or ["Chunk"] * len(row["units"])
    sentences = row["sentences"] or [None] * len(row["units"])
    for unit, label, sentence in zip(row["units"], labels, sentences, strict=True):
        score = base * body_weight if sentence not in (0, None) else base
        yield unit, label, GraphPath((*nodes, unit), relationships, score)


def _noisy_or(scores: Iterable[float]) -> float:
    remaining = 1.0
    for score in scores:
        remaining *= 1.0 - min(max(score, 0.0), 1.0)
    return 1.0 - remaining


def _seed_candidates(seeds: Sequence[Seed]) -> dict[str, Candidate]:
    return {
        seed.node_id: Candidate(
            seed.node_id,
            seed.label,
            seed_score=seed.score,
            lexical_score=seed.lexical,
            paths=[GraphPath((seed.node_id,), (), seed.score)],
        )
        for seed in seeds
    }


def expand_rows(rows: Iterable[dict[str, Any]], seeds: Sequence[Seed], params: ExpansionParams) -> dict[str, Candidate]:
    """Candidates from the seeds and the expansion's rows (``group_paths``), with path scores (pure;
    tested alone)."""
    candidates = _seed_candidates(seeds)
    for row in rows:
        for unit, label, path in group_paths(row, params.decay, params.body_weight):
            if path.hops > params.hops or unit == row["start"]:
                continue
            candidate = candidates.get(unit)
            if candidate is None:
                candidate = candidates[unit] = Candidate(unit, label)
            candidate.paths.append(path)
    for candidate in candidates.values():
        candidate.paths.sort(key=lambda path: (-path.score, path.hops))
        candidate.graph_score = _noisy_or(path.score for path in candidate.paths)
        candidate.support_score = _noisy_or(path.score for path in candidate.paths if path.hops)
    return candidates


def _apply_ppr(
    candidates: dict[str, Candidate], seeds: Sequence[Seed], entity_starts: dict[str, float], damping: float
) -> None:
    edges = {(a, b) for c in candidates.values() for p in c.paths for a, b in zip(p.nodes, p.nodes[1:], strict=False)}
    restart = {seed.node_id: max(seed.score, 0.0) for seed in seeds} | entity_starts
    ranks = personalized_pagerank(edges, restart, damping=damping)
    top = max((ranks.get(node_id, 0.0) for node_id in candidates), default=0.0) or 1.0
    for node_id, candidate in candidates.items():
        candidate.graph_score = candidate.support_score = ranks.get(node_id, 0.0) / top


def expand_parameters(
    *, seeds: Sequence[Seed], starts: dict[str, float], collections: Scope, params: ExpansionParams
) -> dict[str, Any]:
    """The parameters of ``cypher.ANSWER_EXPAND``: the seeds, the question entities' start scores
    (``starts``), the scope and the bounds."""
    return {
        "seeds": [{"id": s.node_id, "score": s.score} for s in seeds],
        "entities": [{"id": eid, "score": score} for eid, score in starts.items()],
        "collections": scope_names(collections),
        "fanout": params.fanout,
        "related_fanout": params.related_fanout if params.hops >= 3 else 0,
        "max_entities": params.max_entities,
        "max_degree": params.max_degree,
        "skip_types": list(params.skip_types),
        "synonym_min_score": params.synonym_min_score,
    }


def graph_expand(
    *,
    driver: Driver,
    seeds: Sequence[Seed],
    entity_starts: Sequence[tuple[str, float]],
    collections: Scope,
    params: ExpansionParams,
) -> Expansion:
    """Stage 3: the seeds plus every unit reached within ``params.hops``, each with its paths.
    ``entity_starts`` are the question's linked entities (id, link score in [0, 1]); a path from
    one starts at the best seed's score times its link score. Paths only start at, cross RELATED
    edges supported by, and end at units of ``collections``."""
    start_score = max((seed.score for seed in seeds), default=1.0)
    starts = {eid: start_score * weight for eid, weight in entity_starts}
    started = time.perf_counter()
    rows = graph_read_timed(
        driver,
        cypher.ANSWER_EXPAND,
        **expand_parameters(seeds=seeds, starts=starts, collections=collections, params=params),
    )
    cypher_ms = (time.perf_counter() - started) * 1000
    candidates = expand_rows(rows, seeds, params)
    if params.scoring == "ppr":
        found = {row["entity"] for row in rows if row["start"] is None and row["entity"] is not None}
        _apply_ppr(candidates, seeds, {eid: starts.get(eid, start_score) for eid in found}, params.ppr_damping)
    return Expansion(candidates, len(rows), cypher_ms, len({row["entity"] for row in rows if row["entity"]}))
