"""Stage 5, redundancy-aware selection with a dynamic K.

Candidates arrive best first. A candidate whose vector is closer than ``duplicate_cosine`` to
one already kept is a near-duplicate and is dropped (one per cluster, the best). K grows with
the question's entropy, ``k = k_min + round(entropy * k_per_bit)`` capped at ``k_max``, and a
source is taken only if all of it fits in the tokens left in the generator's context window:
one that does not fit is skipped whole (never cut mid-source) and the next one is tried.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from apps.answers.types import Candidate, Source


@dataclass(frozen=True)
class SelectionParams:
    k_min: int = 3
    k_max: int = 10
    k_per_bit: float = 1.0
    duplicate_cosine: float = 0.95
    context_tokens: int = 2048  # what the sources may take in all


def dynamic_k(entropy: float, params: SelectionParams) -> int:
    return max(params.k_min, min(params.k_max, params.k_min + round(entropy * params.k_per_bit)))


def _near_duplicate(candidate: Candidate, kept: Sequence[Candidate], threshold: float) -> bool:
    if candidate.vector is None:
        return any(other.text == candidate.text and other.text for other in kept)
    kept_vectors = [other.vector for other in kept if other.vector is not None]
    return bool(kept_vectors) and float(np.max(np.stack(kept_vectors) @ candidate.vector)) >= threshold


def sources_select(
    *, candidates: Sequence[Candidate], entropy: float, params: SelectionParams, count_tokens: Callable[[str], int]
) -> tuple[list[Source], dict[str, int]]:
    """The sources for the prompt, numbered from 1, and what was dropped and why."""
    k = dynamic_k(entropy, params)
    kept: list[Candidate] = []
    token_counts: list[int] = []
    budget = params.context_tokens
    dropped = {"duplicates": 0, "too_long": 0, "empty": 0}
    for candidate in candidates:
        if len(kept) == k:
            break
        if not candidate.text.strip():
            dropped["empty"] += 1
        elif _near_duplicate(candidate, kept, params.duplicate_cosine):
            dropped["duplicates"] += 1
        elif (tokens := count_tokens(candidate.text)) > budget:
            dropped["too_long"] += 1
        else:
            kept.append(candidate)
            token_counts.append(tokens)
            budget -= tokens
    sources = [
        Source(
            number=number,
            node_id=c.node_id,
            kind=c.kind,
            document_id=c.document_id,
            document=c.document,
            collection=c.collection,
            text=c.text,
            image_path=c.image_path,
            score=c.score,
            paths=tuple(c.paths[:3]),
            sentences=c.sentences,
            tokens=tokens,
            seed_score=c.seed_score,
            rerank_score=c.rerank_score or 0.0,
            support_score=c.support_score,
        )
        for number, (c, tokens) in enumerate(zip(kept, token_counts, strict=True), start=1)
    ]
    return sources, {"k": k, **dropped}
