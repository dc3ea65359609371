"""Image search: the images nearest to a text query, only from the collections the asker can read.

With a CLIP model the query goes through CLIP's text tower into the CLIP space, which holds the
images themselves; without one (the offline profile) the text space is searched for images by
their text (ImageNet labels, descriptions, OCR), so the search works in every deployment. The
vector store's collection filter applies first, and the graph read that fills in the documents
applies the same collections again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from neo4j import Driver
from neo4j.exceptions import Neo4jError, ServiceUnavailable, SessionExpired

from apps.answers.scope import Scope, scope_names
from apps.answers.seeds import Search
from apps.answers.services import GRAPH_DOWN, question_check
from apps.answers.types import AnswerError
from apps.graph import cypher
from apps.graph.db import graph_read
from apps.models.interfaces import ClipEmbedder, TextEmbedder
from apps.vectors.errors import VectorIndexError

logger = logging.getLogger(__name__)

TEXT_OVERFETCH = 8  # the text space holds chunks and rows too
# Images scoring at least this share of the best one are shown first; the rest are one click away
# ("show more"): a display rule, so that one good image is not followed by a page of unrelated ones.
SCORE_RATIO = 0.85


@dataclass(frozen=True)
class ImageHit:
    node_id: str
    document: str
    collection: str
    text: str
    score: float
    document_id: str = ""


@dataclass(frozen=True)
class ImageResults:
    query: str
    space: str  # "clip" or "text"
    hits: tuple[ImageHit, ...]  # best first
    ratio: float = SCORE_RATIO

    @property
    def cutoff(self) -> float:
        """The lowest score shown before "show more": ``ratio`` of the best score (of its absolute
        value, so a negative best still keeps itself)."""
        if not self.hits:
            return 0.0
        best = self.hits[0].score
        return best - abs(best) * (1.0 - self.ratio)

    @property
    def strong(self) -> tuple[ImageHit, ...]:
        return tuple(hit for hit in self.hits if hit.score >= self.cutoff)

    @property
    def weaker(self) -> tuple[ImageHit, ...]:
        return tuple(hit for hit in self.hits if hit.score < self.cutoff)

    @property
    def ratio_percent(self) -> int:
        return round((1.0 - self.ratio) * 100)


def _nearest(
    *, query: str, k: int, wanted: set[str] | None, text: TextEmbedder, clip: ClipEmbedder | None, search: Search
) -> tuple[str, list[tuple[str, float]]]:
    if clip is not None:
        [matches] = search(space="clip", queries=clip.embed_texts([query])[:1], k=k, collections=wanted)
        return "clip", [(m.node_id, m.score) for m in matches if m.label == "Image"]
    vector = text.embed_queries([query])[0]
    [matches] = search(space="text", queries=vector[None, :], k=k * TEXT_OVERFETCH, collections=wanted)
    return "text", [(m.node_id, m.score) for m in matches if m.label == "Image"][:k]


def images_search(
    *,
    query: str,
    collections: Scope,
    k: int,
    driver: Driver,
    text: TextEmbedder,
    clip: ClipEmbedder | None,
    search: Search,
) -> ImageResults:
    """The ``k`` images nearest to ``query`` among ``collections``, best first; failures of the
    graph or the vector index become an ``AnswerError`` with a plain message."""
    query = question_check(query)
    names = scope_names(collections)
    if names == []:
        return ImageResults(query, "clip" if clip is not None else "text", ())
    try:
        space, nearest = _nearest(
            query=query, k=k, wanted=None if names is None else set(names), text=text, clip=clip, search=search
        )
        records = graph_read(driver, cypher.ANSWER_UNITS, ids=[node for node, _ in nearest], collections=names)
    except VectorIndexError as exc:
        raise AnswerError(f"The image index cannot be used: {exc}", stage="vector_search") from exc
    except (ServiceUnavailable, SessionExpired, OSError) as exc:
        raise AnswerError(GRAPH_DOWN, stage="graph_expansion") from exc
    except Neo4jError as exc:
        logger.exception("an image search query failed")
        raise AnswerError("A knowledge graph query failed; the error is logged.", stage="graph_expansion") from exc
    found = {record["id"]: record for record in records if record["label"] == "Image"}
    hits = tuple(
        ImageHit(
            node,
            found[node]["document"] or "",
            found[node]["collection"] or "",
            found[node]["text"] or "",
            score,
            found[node].get("document_id") or "",
        )
        for node, score in nearest
        if node in found
    )
    return ImageResults(query, space, hits)
