"""Stage 4, rerank: a query-relevance score for each shortlisted candidate, blended with its graph score.

With the offline profile the reranker is the text embedder's cosine; the candidates' vectors
are already in the text index, so they are read from there instead of embedded again (the
same model gave them, so the scores are the same, in microseconds instead of seconds). Any
other reranker (the hub profile's cross-encoder) scores the candidates' texts.

    score = rerank score + graph_weight * support score

where the support score is the noisy-or of the candidate's expansion paths (0 for a seed that
nothing else leads to): relevance first, raised by the graph's evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from apps.answers.types import Candidate
from apps.models.interfaces import Reranker

StoredVectors = Callable[[Sequence[str]], dict[str, npt.NDArray[np.float32]]]
Embed = Callable[[Sequence[str]], npt.NDArray[np.float32]]


def attach_vectors(candidates: Sequence[Candidate], stored: StoredVectors, embed: Embed) -> None:
    """Give each candidate its text-space vector: the stored one, else (an index that cannot
    return its vectors, a unit added since) its text embedded now."""
    found = stored([candidate.node_id for candidate in candidates])
    missing = [c for c in candidates if c.node_id not in found and c.text.strip()]
    if missing:
        found.update(zip((c.node_id for c in missing), embed([c.text for c in missing]), strict=True))
    for candidate in candidates:
        candidate.vector = found.get(candidate.node_id)


def rerank_scores(
    *,
    question: str,
    query_vector: npt.NDArray[np.float32],
    candidates: Sequence[Candidate],
    reranker: Reranker | None,
) -> list[float]:
    """One relevance score per candidate: a cross-encoder's when ``reranker`` is given, else
    the cosine of stored vectors (a candidate without one keeps its seed similarity)."""
    if reranker is not None:
        return reranker.rerank(question, [candidate.text for candidate in candidates])
    return [
        float(candidate.vector @ query_vector) if candidate.vector is not None else candidate.seed_score
        for candidate in candidates
    ]


def rerank_apply(candidates: list[Candidate], scores: Sequence[float], *, graph_weight: float) -> list[Candidate]:
    """Set each candidate's rerank and final score; best first."""
    for candidate, score in zip(candidates, scores, strict=True):
        candidate.rerank_score = score
        candidate.score = score + graph_weight * candidate.support_score
    return sorted(candidates, key=lambda candidate: (-candidate.score, candidate.node_id))
