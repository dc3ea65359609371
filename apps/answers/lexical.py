"""Stage 2b, lexical seeds: the units whose words match the question's, by BM25, fused with the dense seeds.

Dense similarity misses what only a rare word gives away: a film's title, a surname, a code. The
full-text index (``unit_text_fulltext``: Lucene's english analyzer, BM25 scoring, maintained by
Neo4j as units are written and deleted) finds those units; each lexical hit becomes a seed with

    score   = the cosine of its stored text vector with the question's (the dense seeds' scale)
    lexical = its BM25 score / the best BM25 score of the question

so the expansion starts from it like from any other seed, and rerank adds
``lexical_weight * lexical`` to its final score. A unit both channels found keeps its cosine
and gains its lexical score.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
from neo4j import Driver
from neo4j.exceptions import ClientError

from apps.answers.rerank import QueryVectors, StoredVectors
from apps.answers.scope import Scope, scope_names
from apps.answers.types import Seed
from apps.core.language import has_cjk, words
from apps.graph import cypher
from apps.graph.db import graph_read_timed
from apps.vectors.spaces import space_score

logger = logging.getLogger(__name__)
MAX_QUERY_TERMS = 32


@dataclass(frozen=True)
class LexicalParams:
    k: int = 5  # lexical seeds kept (0 turns the channel off)
    overfetch: int = 20  # the index spans every collection: ask it for k * overfetch hits
    weight: float = 0.1  # what a unit's normalised BM25 adds to its final score


TEXT_INDEX = "unit_text_fulltext"
CJK_TEXT_INDEX = "unit_cjk_fulltext"


def lexical_query(question: str) -> str:
    """The question as a Lucene query that cannot fail to parse: its words (Chinese segmented into
    dictionary words: apps/core/language.py), lower-cased (so no AND/OR/NOT operators), without
    Lucene's special characters, any of them matching."""
    found = [word for word in words(question) if len(word) > 1 or word.isdigit()]
    return " ".join(list(dict.fromkeys(found))[:MAX_QUERY_TERMS])


def lexical_index(question: str) -> str:
    """The full-text index for the question: the cjk one (character pairs) when it is written in
    Chinese, Japanese or Korean, where the english analyzer would match single characters."""
    return CJK_TEXT_INDEX if has_cjk(question) else TEXT_INDEX


LexicalHit = tuple[str, str, float, str]  # unit id, label, BM25 score, collection


def lexical_search(*, driver: Driver, question: str, collections: Scope, params: LexicalParams) -> list[LexicalHit]:
    """(unit id, label, BM25 score, collection) of the best full-text matches in ``collections``."""
    query = lexical_query(question)
    names = scope_names(collections)
    if not query or params.k <= 0 or names == []:
        return []
    try:
        rows = graph_read_timed(
            driver,
            cypher.ANSWER_LEXICAL,
            index=lexical_index(question),
            query=query,
            limit=params.k * (params.overfetch if names is not None else 1),
            k=params.k,
            collections=names,
        )
    except ClientError as exc:  # the full-text index is missing (`manage.py graph_schema` creates it)
        logger.warning("lexical seeds skipped: %s", exc.message)
        return []
    return [(row["id"], row["label"], float(row["score"]), row["collection"] or "") for row in rows]


def seeds_fuse(
    *,
    dense: Sequence[Seed],
    lexical: Sequence[LexicalHit],
    query_vectors: QueryVectors,
    stored_vectors: StoredVectors,
    space_of: Callable[[str], str] = lambda _collection: "text",
) -> list[Seed]:
    """The dense seeds with the lexical hits added (best first by similarity): a unit both found
    gains its lexical score; one only the full-text search found is scored by its stored vector in
    its collection's text space (``space_of``; 0 when the vector index does not have it)."""
    if not lexical:
        return list(dense)
    top = max(score for _, _, score, _ in lexical) or 1.0
    normalised = {node_id: score / top for node_id, _, score, _ in lexical}
    fused = {seed.node_id: replace(seed, lexical=normalised.get(seed.node_id, 0.0)) for seed in dense}
    new = [hit for hit in lexical if hit[0] not in fused]
    vectors: dict[str, npt.NDArray[np.float32]] = {}
    for space in {space_of(collection) for *_, collection in new}:
        ids = [node_id for node_id, *_, collection in new if space_of(collection) == space]
        vectors.update(stored_vectors(ids, space))
    for node_id, label, _, collection in new:
        vector, space = vectors.get(node_id), space_of(collection)
        similarity = 0.0
        if vector is not None and space in query_vectors:
            similarity = space_score(space, float(vector @ query_vectors[space]))
        fused[node_id] = Seed(node_id, label, similarity, "lexical", collection, normalised[node_id])
    return sorted(fused.values(), key=lambda seed: (-seed.score, seed.node_id))
