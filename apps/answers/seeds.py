"""Stage 2, seeds: the question embedded in each space and the nearest units found by FAISS.

A text space ("text", or "mtext" for the collections in the multilingual one) holds chunks, table
rows and images (their labels and OCR text); so that rows
and images are not crowded out by chunks, the search over-fetches and keeps the best
``k_chunks`` chunks, ``k_rows`` rows and ``k_images`` images. With a CLIP model the question
also goes through CLIP's text tower into the CLIP space, which holds the images themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from apps.answers.scope import Scope, scope_names
from apps.answers.types import Seed
from apps.models.interfaces import ClipEmbedder, TextEmbedder
from apps.vectors.spaces import space_score
from apps.vectors.types import TEXT_SPACES, VectorMatch

Search = Callable[..., list[list[VectorMatch]]]
OVERFETCH = 4


@dataclass(frozen=True)
class SeedLimits:
    k_chunks: int = 10
    k_rows: int = 4
    k_images: int = 4


def query_embed(
    *, question: str, texts: Mapping[str, TextEmbedder], clip: ClipEmbedder | None
) -> dict[str, npt.NDArray[np.float32]]:
    """The question's vector in each text space of ``texts`` (the spaces its collections use:
    apps/vectors/spaces.py), and in the CLIP space when there is one."""
    vectors = {space: embedder.embed_queries([question])[0] for space, embedder in texts.items()}
    if clip is not None:
        vectors["clip"] = clip.embed_texts([question])[0]
    return vectors


def _per_label(matches: Sequence[VectorMatch], limits: SeedLimits, space: str) -> list[Seed]:
    """The best matches of each label within its quota, their cosines on the text space's scale."""
    quota = {"Chunk": limits.k_chunks, "Row": limits.k_rows, "Image": limits.k_images}
    seeds = []
    for match in matches:
        if quota.get(match.label, 0) > 0:
            quota[match.label] -= 1
            seeds.append(Seed(match.node_id, match.label, space_score(space, match.score), space, match.collection))
    return seeds


def seeds_search(
    *,
    vectors: dict[str, npt.NDArray[np.float32]],
    limits: SeedLimits,
    collections: Scope,
    search: Search,
) -> list[Seed]:
    """The seeds of every space, best first; a unit found in both spaces keeps its best score.
    Only units of ``collections`` are searched (an empty scope finds nothing)."""
    names = scope_names(collections)
    wanted = None if names is None else set(names)
    k = OVERFETCH * (limits.k_chunks + limits.k_rows + limits.k_images)
    found = []
    for space in TEXT_SPACES:  # each holds only its own collections' units: the same filter serves both
        if space in vectors:
            matches = search(space=space, queries=vectors[space][None, :], k=k, collections=wanted)[0]
            found += _per_label(matches, limits, space)
    if "clip" in vectors and limits.k_images:
        clip_hits = search(space="clip", queries=vectors["clip"][None, :], k=limits.k_images, collections=wanted)[0]
        found += [Seed(hit.node_id, hit.label, hit.score, "clip", hit.collection) for hit in clip_hits]
    best: dict[str, Seed] = {}
    for seed in found:
        if seed.node_id not in best or seed.score > best[seed.node_id].score:
            best[seed.node_id] = seed
    return sorted(best.values(), key=lambda seed: -seed.score)
