"""Stage 4, rerank: a query-relevance score for each shortlisted candidate, blended with its graph score.

With the offline profile the reranker is the text embedder's cosine; the candidates' vectors
are already in the text index, so they are read from there instead of embedded again (the
same model gave them, so the scores are the same, in microseconds instead of seconds). Any
other reranker (the hub profile's cross-encoder) scores the candidates' texts.

    score = rerank score + graph_weight * support score + lexical_weight * lexical score

where the support score is the noisy-or of the candidate's expansion paths (0 for a seed that
nothing else leads to): relevance first, raised by the graph's evidence; the lexical score is the unit's BM25 over the
question's best (``apps.answers.lexical``), 0 for a unit the full-text search did not find.

Then bridges are brought forward (``bridges_promote``): each of the best few candidates names
the unit it leads to most strongly (its rerank score plus ``path_weight`` times its best path
from that candidate), and those units are placed right after the first ``position``. A
multi-hop question's second passage (the page of the bridge entity: the author of the book,
the country of the river) shares few words with the question and would otherwise rank below
first-hop look-alikes; the graph path from the passage that names it is the evidence.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from apps.answers.types import Candidate
from apps.core.language import written_in_cjk
from apps.models.interfaces import Reranker
from apps.vectors.spaces import space_score

# Stored vectors of units, by unit id, looked up in one text space.
StoredVectors = Callable[[Sequence[str], str], dict[str, npt.NDArray[np.float32]]]
Embed = Callable[[Sequence[str]], npt.NDArray[np.float32]]
QueryVectors = Mapping[str, npt.NDArray[np.float32]]  # the question's vector in each text space


def attach_vectors(
    candidates: Sequence[Candidate],
    stored: StoredVectors,
    embed: Callable[[str], Embed],
    space_of: Callable[[str], str] = lambda _collection: "text",
) -> None:
    """Give each candidate its text space (its collection's: ``space_of``) and its vector there: the
    stored one, else (an index that cannot return its vectors, a unit added since) its text embedded
    now by that space's ``embed``."""
    by_space: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in candidates:
        candidate.space = space_of(candidate.collection)
        by_space[candidate.space].append(candidate)
    for space, members in by_space.items():
        found = stored([candidate.node_id for candidate in members], space)
        missing = [c for c in members if c.node_id not in found and c.text.strip()]
        if missing:
            found.update(zip((c.node_id for c in missing), embed(space)([c.text for c in missing]), strict=True))
        for candidate in members:
            candidate.vector = found.get(candidate.node_id)


def rerank_scores(
    *,
    question: str,
    query_vectors: QueryVectors,
    candidates: Sequence[Candidate],
    reranker: Reranker | None,
) -> list[float]:
    """One relevance score per candidate: a cross-encoder's when ``reranker`` is given, else the
    cosine of its stored vector with the question's in its space, on the text space's scale
    (``space_score``, by the candidate's script and the question's; a candidate without a vector
    keeps its seed similarity)."""
    if reranker is not None:
        return reranker.rerank(question, [candidate.text for candidate in candidates])
    asked_in_cjk = written_in_cjk(question)

    def score(candidate: Candidate, cosine: float) -> float:
        if candidate.space == "text":  # MiniLM's own scale: nothing to read in the text
            return cosine
        cjk = written_in_cjk(candidate.text)
        return space_score(candidate.space, cosine, cjk=cjk, cross_script=cjk != asked_in_cjk)

    return [
        score(candidate, float(candidate.vector @ query_vectors[candidate.space]))
        if candidate.vector is not None and candidate.space in query_vectors
        else candidate.seed_score
        for candidate in candidates
    ]


def rerank_apply(
    candidates: list[Candidate], scores: Sequence[float], *, graph_weight: float, lexical_weight: float = 0.0
) -> list[Candidate]:
    """Set each candidate's rerank and final score; best first."""
    for candidate, score in zip(candidates, scores, strict=True):
        candidate.rerank_score = score
        candidate.score = score + graph_weight * candidate.support_score + lexical_weight * candidate.lexical_score
    return sorted(candidates, key=lambda candidate: (-candidate.score, candidate.node_id))


@dataclass(frozen=True)
class BridgeParams:
    starts: int = 2  # the best this-many candidates each bring forward the unit they lead to
    position: int = 2  # placed right after the first this-many candidates
    path_weight: float = 2.0  # weight of the path from the start in choosing that unit


def bridge_from(start: Candidate, ranked: Sequence[Candidate], path_weight: float) -> Candidate | None:
    """The candidate ``start`` leads to most strongly: its rerank score plus ``path_weight`` times its
    best path from ``start`` (the first of equals in ``ranked``); None when no path leads from it."""
    best: Candidate | None = None
    best_score = -math.inf
    for candidate in ranked:
        if candidate is start:
            continue
        from_start = [path.score for path in candidate.paths if path.hops and path.nodes[0] == start.node_id]
        if not from_start:
            continue
        score = (candidate.rerank_score or 0.0) + path_weight * max(from_start)
        if score > best_score:
            best, best_score = candidate, score
    return best


def bridges_promote(ranked: list[Candidate], params: BridgeParams) -> list[Candidate]:
    """``ranked`` (best first) with each of the first ``params.starts`` candidates' bridge unit
    moved up to just after the first ``params.position``; a promoted unit's score is raised to
    the next one's so the list stays in score order."""
    if params.starts <= 0 or len(ranked) <= params.position:
        return ranked
    head = ranked[: params.position]
    bridges: list[Candidate] = []
    for start in ranked[: params.starts]:
        bridge = bridge_from(start, ranked, params.path_weight)
        if bridge is not None and bridge not in head and bridge not in bridges:
            bridges.append(bridge)
    rest = [candidate for candidate in ranked[params.position :] if candidate not in bridges]
    if rest:
        for bridge in bridges:
            bridge.score = max(bridge.score, rest[0].score)
    return head + bridges + rest
