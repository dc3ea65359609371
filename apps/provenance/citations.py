"""Sentence-level citations derived from the token scores.

The model's own bracket markers ("[2]") are removed: a citation is only what attribution
supports. The answer is cut into sentences and list items (``apps.provenance.sentences``); each
cites, as "[n]" markers before its final punctuation, the sources that carry its attribution
mass (the scores of its tokens summed per source):

- a source is cited only with at least ``min_share`` of the sentence's total mass, so a sentence
  whose mass is spread thinly over many sources cites none;
- first comes the source that tints most of the sentence's tokens on the audit page (each token
  takes the colour of its best unit's source), so markers and colours never disagree; if that
  source lacks ``min_share`` the sentence cites nothing;
- then, by mass, any other source with at least ``share`` of the best source's mass, up to
  ``limit`` in all.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from apps.provenance.sentences import sentence_spans
from apps.provenance.types import Attribution, TokenSpan

MODEL_MARKER = re.compile(r"\s?\[\d+(?:\s*[,;\u2013-]\s*\d+)*\]")
SHARE = 0.5  # of the best source's mass
MIN_SHARE = 0.2  # of the sentence's total mass
LIMIT = 3


@dataclass
class CitedAnswer:
    text: str
    token_offsets: list[tuple[int, int] | None]  # per attribution token: offsets in ``text`` (None: removed)
    citations: list[dict[str, Any]] = field(default_factory=list)
    insertions: list[tuple[int, int]] = field(default_factory=list)  # (offset without markers, width)


def _without_markers(text: str) -> tuple[str, list[int]]:
    """The text without model markers, and for every old offset (0..len) its new offset (-1: removed)."""
    keep = np.ones(len(text) + 1, dtype=bool)
    for match in MODEL_MARKER.finditer(text):
        keep[match.start() : match.end()] = False
    new_of_old = np.cumsum(keep) - 1
    new_of_old[~keep] = -1
    cleaned = "".join(ch for ch, kept in zip(text, keep[:-1], strict=True) if kept)
    return cleaned, new_of_old.tolist()


def _cleaned_offsets(tokens: Sequence[TokenSpan], new_of_old: list[int]) -> list[tuple[int, int] | None]:
    offsets: list[tuple[int, int] | None] = []
    for token in tokens:
        mapped = [new_of_old[i] for i in range(token.start, token.end) if new_of_old[i] >= 0]
        offsets.append((mapped[0], mapped[-1] + 1) if mapped else None)
    return offsets


def token_offsets(
    generated: str, tokens: Sequence[TokenSpan], insertions: Sequence[tuple[int, int]]
) -> list[tuple[int, int] | None]:
    """Where the tokens of ``generated`` lie in its cited form (given that form's insertions)."""
    _, new_of_old = _without_markers(generated)
    return [None if span is None else _shifted(span, insertions) for span in _cleaned_offsets(tokens, new_of_old)]


def token_tints(attribution: Attribution) -> list[int | None]:
    """Per token, the source (0-based) whose colour the audit page gives it: that of its best unit
    (``Attribution.top``, the order the stored supports keep); None where no unit scores above 0."""
    tints: list[int | None] = []
    for index in range(len(attribution.tokens)):
        best = attribution.top(index, 1)
        tints.append(attribution.units[best[0][0]].source if best else None)
    return tints


def _lead(tints: Sequence[int | None], mass: npt.NDArray[np.float64]) -> int | None:
    """The source that tints most tokens; on a tie the one with more mass, then the first."""
    counts = Counter(tint for tint in tints if tint is not None)
    if not counts:
        return None
    return max(counts, key=lambda source: (counts[source], float(mass[source]), -source))


def sentence_sources(
    *, mass: npt.NDArray[np.float64], tints: Sequence[int | None], share: float, min_share: float, limit: int
) -> list[int]:
    """The sources (0-based) a sentence cites, given each source's attribution mass over its tokens
    and its tokens' tints: the tint majority first, then the others by mass (see the module)."""
    mass = np.clip(mass, 0.0, None)
    total = float(mass.sum())
    if total <= 0:
        return []
    supported = (mass > 0) & (mass >= min_share * total)
    lead = _lead(tints, mass)
    if lead is None or not supported[lead]:
        return []
    ranked = (int(source) for source in np.argsort(-mass, kind="stable"))
    others = [
        source for source in ranked if source != lead and supported[source] and mass[source] >= share * mass.max()
    ]
    return [lead, *others][: max(limit, 0)]


def _between_tokens(point: int, offsets: Sequence[tuple[int, int] | None]) -> int:
    """A marker goes between tokens: one that straddles ``point`` pushes it to its end."""
    return max([span[1] for span in offsets if span is not None and span[0] < point < span[1]], default=point)


def cite(
    generated: str,
    attribution: Attribution,
    *,
    share: float = SHARE,
    limit: int = LIMIT,
    min_share: float = MIN_SHARE,
) -> CitedAnswer:
    """``generated`` without the model's markers, with a marker per sentence for the sources its
    attribution supports; the tokens' offsets in that text and the citations (sentence offsets,
    marker offsets and its insertion point in the text without markers, source numbers)."""
    cleaned, new_of_old = _without_markers(generated)
    offsets = _cleaned_offsets(attribution.tokens, new_of_old)
    sources = np.array([unit.source for unit in attribution.units], dtype=np.int64)
    tints = token_tints(attribution)
    inserts: list[tuple[int, str, dict[str, Any]]] = []
    for start, end, point in sentence_spans(cleaned):
        rows = [i for i, span in enumerate(offsets) if span is not None and start <= span[0] < end]
        if not rows or not len(sources):
            continue
        mass = np.bincount(sources, weights=attribution.scores[rows].sum(axis=0), minlength=int(sources.max()) + 1)
        chosen = sentence_sources(
            mass=mass, tints=[tints[i] for i in rows], share=share, min_share=min_share, limit=limit
        )
        if not chosen:
            continue
        numbers = [source + 1 for source in chosen]
        marker = "".join(f"[{n}]" for n in numbers)
        inserts.append((_between_tokens(point, offsets), marker, {"start": start, "end": end, "sources": numbers}))
    text, shift, citations, widths = cleaned, 0, [], []
    for point, marker, citation in inserts:
        at = point + shift
        spaced = (" " if at > 0 and not text[at - 1].isspace() else "") + marker
        text = text[:at] + spaced + text[at:]
        citation.update(
            start=citation["start"] + shift,
            end=citation["end"] + shift + len(spaced),
            marker_start=at,
            marker_end=at + len(spaced),
            at=point,
            width=len(spaced),
        )
        widths.append((point, len(spaced)))
        shift += len(spaced)
        citations.append(citation)
    moved = [None if span is None else _shifted(span, widths) for span in offsets]
    return CitedAnswer(text, moved, citations, widths)


def _shifted(span: tuple[int, int], widths: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """A token's offsets once the markers inserted at or before its start are in the text."""
    shift = sum(width for point, width in widths if point <= span[0])
    return span[0] + shift, span[1] + shift
