"""Merge suggestions: pairs of entities of the same type whose names look like one thing; and the
synonym edges ingestion stored (``apps.ingest.synonyms``), to confirm, reject or merge.

Bounded by construction: the candidates are the ``CANDIDATES`` most mentioned entities the
curator can read, pairs are only formed within a type group (spaCy's GPE and LOC are both
places, as in ``apps.graph.identity.entity_key``), and the slower edit ratio is only computed
for pairs whose cheaper upper bound can still reach the threshold.

A pair's score mixes name similarity (the best of the edit ratio of the normalised names and
their token containment) with the cosine similarity of the names' text embeddings; a name or
alias the two share makes it at least ``ALIAS_SCORE``.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import combinations
from typing import Any

import numpy as np
from django.core.exceptions import ImproperlyConfigured
from neo4j import Driver

from apps.graph import cypher
from apps.graph.db import graph_read
from apps.graph.identity import entity_group, normalise_entity_name
from apps.models.interfaces import Vectors

logger = logging.getLogger(__name__)

CANDIDATES = 200
PAIRS = 50
MIN_SCORE = 0.6
ALIAS_SCORE = 0.95
NAME_WEIGHT = 0.5  # the rest is the embedding's; without an embedder the name score is the score
_WORD = re.compile(r"\w+")

Embed = Callable[[Sequence[str]], Vectors]


@dataclass(frozen=True)
class Candidate:
    id: str
    name: str
    type: str
    aliases: tuple[str, ...]
    mentions: int


@dataclass(frozen=True)
class Suggestion:
    """Two entities that may be one; ``keep`` has at least as many mentions as ``drop``."""

    keep: Candidate
    drop: Candidate
    score: float
    edit: float  # edit ratio of the normalised names
    tokens: float  # share of the shorter name's words found in the other
    alias: bool  # a name or alias of one is a name or alias of the other
    embedding: float | None  # cosine of the names' embeddings (None: no embedder)


def normalised(name: str) -> str:
    return normalise_entity_name(name) or " ".join(name.casefold().split())


def names_of(candidate: Candidate) -> set[str]:
    """The entity's normalised name and aliases."""
    return {normalised(name) for name in (candidate.name, *candidate.aliases)} - {""}


def token_containment(first: str, second: str) -> float:
    """The share of the shorter name's words that the other name has too."""
    a, b = set(_WORD.findall(first)), set(_WORD.findall(second))
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def pair_score(*, name: float, alias: bool, embedding: float | None) -> float:
    score = name if embedding is None else NAME_WEIGHT * name + (1 - NAME_WEIGHT) * max(0.0, embedding)
    return max(score, ALIAS_SCORE) if alias else score


def _pair(
    first: Candidate, second: Candidate, forms: dict[str, set[str]], embedding: float | None, min_score: float
) -> Suggestion | None:
    a, b = normalised(first.name), normalised(second.name)
    alias = bool(forms[first.id] & forms[second.id])
    tokens = token_containment(a, b)
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    # The edit ratio is bounded by quick_ratio(); skip it when even that cannot reach the threshold.
    if not alias and pair_score(name=max(tokens, matcher.quick_ratio()), alias=False, embedding=embedding) < min_score:
        return None
    edit = matcher.ratio()
    score = pair_score(name=max(edit, tokens), alias=alias, embedding=embedding)
    if score < min_score:
        return None
    keep, drop = (first, second) if (first.mentions, second.id) >= (second.mentions, first.id) else (second, first)
    return Suggestion(keep, drop, round(score, 3), round(edit, 3), round(tokens, 3), alias, embedding)


def _cosines(candidates: Sequence[Candidate], embed: Embed | None) -> np.ndarray | None:
    if embed is None or not candidates:
        return None
    vectors = np.asarray(embed([candidate.name for candidate in candidates]), dtype=np.float32)
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return np.asarray(unit @ unit.T)


def rank_pairs(
    candidates: Sequence[Candidate],
    *,
    embed: Embed | None,
    limit: int = PAIRS,
    min_score: float = MIN_SCORE,
) -> list[Suggestion]:
    """The best ``limit`` pairs of candidates of the same type group scoring at least ``min_score``,
    best first (ties: more mentions between them first)."""
    cosines = _cosines(candidates, embed)
    forms = {candidate.id: names_of(candidate) for candidate in candidates}
    groups: dict[str, list[int]] = defaultdict(list)
    for index, candidate in enumerate(candidates):
        groups[entity_group(candidate.type)].append(index)
    found = []
    for members in groups.values():
        for i, j in combinations(members, 2):
            embedding = None if cosines is None else round(float(cosines[i, j]), 3)
            suggestion = _pair(candidates[i], candidates[j], forms, embedding, min_score)
            if suggestion is not None:
                found.append(suggestion)
    found.sort(key=lambda s: (-s.score, -(s.keep.mentions + s.drop.mentions), s.keep.id, s.drop.id))
    return found[:limit]


def candidates_read(*, driver: Driver, collections: Sequence[str] | None, limit: int = CANDIDATES) -> list[Candidate]:
    """The ``limit`` most mentioned entities with a mention the reader can read."""
    records = graph_read(
        driver,
        cypher.CURATION_SUGGESTION_CANDIDATES,
        collections=None if collections is None else list(collections),
        limit=limit,
    )
    return [
        Candidate(
            id=str(r["id"]),
            name=str(r["name"] or ""),
            type=str(r["type"] or ""),
            aliases=tuple(str(a) for a in r["aliases"] or []),
            mentions=int(r["mentions"]),
        )
        for r in records
    ]


@dataclass(frozen=True)
class NameEmbedder:
    """The names' embedding for this request: ``ready`` (``embed`` set), ``cold`` (the text embedder
    is not loaded in this process yet and loading was not asked for) or ``missing`` (not installed)."""

    embed: Embed | None
    state: str


_loaded_here = False  # whether this process has loaded the text embedder through name_embedder


def name_embedder(*, load: bool) -> NameEmbedder:
    """The text embedder's document embedding. Loading it takes seconds the first time in a process,
    so unless ``load`` is asked for, a process that has not loaded it yet answers ``cold``."""
    global _loaded_here
    if not (load or _loaded_here):
        return NameEmbedder(None, "cold")
    from apps.models import registry

    try:
        embedder = registry.text_embedder()
    except (ImproperlyConfigured, ImportError, OSError) as exc:
        logger.warning("merge suggestions without name embeddings: %s", exc)
        return NameEmbedder(None, "missing")
    _loaded_here = True
    return NameEmbedder(embedder.embed_documents, "ready")


def merge_suggestions(
    *, driver: Driver, collections: Sequence[str] | None, embed: Embed | None, limit: int = PAIRS
) -> list[Suggestion]:
    return rank_pairs(candidates_read(driver=driver, collections=collections), embed=embed, limit=limit)


SYNONYM_STATUSES = ("suggested", "confirmed", "rejected")


@dataclass(frozen=True)
class SynonymEdge:
    """A stored synonym edge between two readable entities (``mentions``: readable ones)."""

    source: Candidate
    target: Candidate
    score: float
    status: str


def synonym_edges(
    *, driver: Driver, collections: Sequence[str] | None, status: str = "suggested", limit: int = PAIRS
) -> list[SynonymEdge]:
    """The ``limit`` best scored synonym edges of ``status`` whose entities the reader can both read."""
    records = graph_read(
        driver,
        cypher.CURATION_SYNONYMS,
        statuses=[status],
        collections=None if collections is None else list(collections),
        limit=limit,
    )
    return [
        SynonymEdge(_end(r, "source"), _end(r, "target"), score=float(r["score"]), status=str(r["status"]))
        for r in records
    ]


def _end(record: Any, end: str) -> Candidate:
    """One end of a ``CURATION_SYNONYMS`` record (``end``: source or target)."""
    return Candidate(
        str(record[end]),
        str(record[f"{end}_name"] or ""),
        str(record[f"{end}_type"] or ""),
        (),
        int(record[f"{end}_mentions"]),
    )
