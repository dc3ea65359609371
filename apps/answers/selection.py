"""Stage 5, redundancy-aware selection with a dynamic K.

Candidates arrive best first. A candidate whose vector is closer than ``duplicate_cosine`` to
one already kept is a near-duplicate and is dropped (one per cluster, the best); one without
text is dropped too. K grows with the question's entropy, ``k = k_min + round(entropy * k_per_bit)``
capped at ``k_max``. Whether each source fits in the generator's context window
(``context_tokens``) is decided by stage 6 on what the prompt shows of it (``prompt_assemble``):
a source that does not fit is left out whole, never cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from apps.answers.types import Candidate, Source


@dataclass(frozen=True)
class SelectionParams:
    k_min: int = 3
    k_max: int = 10
    k_per_bit: float = 1.0
    duplicate_cosine: float = 0.95
    context_tokens: int = 2048  # what the prompt (system and user messages) may take (applied by assembly)


def dynamic_k(entropy: float, params: SelectionParams) -> int:
    return max(params.k_min, min(params.k_max, params.k_min + round(entropy * params.k_per_bit)))


def _near_duplicate(candidate: Candidate, kept: Sequence[Candidate], threshold: float) -> bool:
    if candidate.vector is None:
        return any(other.text == candidate.text and other.text for other in kept)
    kept_vectors = [other.vector for other in kept if other.vector is not None and other.space == candidate.space]
    return bool(kept_vectors) and float(np.max(np.stack(kept_vectors) @ candidate.vector)) >= threshold


def _source(number: int, candidate: Candidate) -> Source:
    return Source(
        number=number,
        node_id=candidate.node_id,
        kind=candidate.kind,
        document_id=candidate.document_id,
        document=candidate.document,
        collection=candidate.collection,
        text=candidate.text,
        image_path=candidate.image_path,
        score=candidate.score,
        paths=tuple(candidate.paths[:3]),
        sentences=candidate.sentences,
        seed_score=candidate.seed_score,
        rerank_score=candidate.rerank_score or 0.0,
        support_score=candidate.support_score,
    )


def sources_select(
    *, candidates: Sequence[Candidate], entropy: float, params: SelectionParams
) -> tuple[list[Source], dict[str, int]]:
    """The sources for the prompt, numbered from 1, and what was dropped and why."""
    k = dynamic_k(entropy, params)
    kept: list[Candidate] = []
    dropped = {"duplicates": 0, "empty": 0}
    for candidate in candidates:
        if len(kept) == k:
            break
        if not candidate.text.strip():
            dropped["empty"] += 1
        elif _near_duplicate(candidate, kept, params.duplicate_cosine):
            dropped["duplicates"] += 1
        else:
            kept.append(candidate)
    return [_source(number, c) for number, c in enumerate(kept, start=1)], {"k": k, **dropped}
