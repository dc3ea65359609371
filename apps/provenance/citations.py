"""Sentence-level citations derived from the token scores.

The model's own bracket markers ("[2]") are removed: a citation is only what attribution
supports. Each sentence of the answer then cites the source with the most attribution mass
over its tokens, and any other source with at least ``share`` of that mass (at most
``limit``), as "[n]" markers before the sentence's final punctuation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from apps.provenance.types import Attribution, TokenSpan

MODEL_MARKER = re.compile(r"\s?\[\d+(?:\s*[,;\u2013-]\s*\d+)*\]")
SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)")


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


def _sentences(text: str) -> list[tuple[int, int, int]]:
    """(start, end, insertion point of a marker) of each sentence."""
    spans, start = [], 0
    for match in SENTENCE_END.finditer(text):
        spans.append((start, match.end(), match.start()))
        start = match.end()
    if text[start:].strip():
        end = len(text.rstrip())
        spans.append((start, end, end))
    return spans


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


def cite(generated: str, attribution: Attribution, *, share: float = 0.5, limit: int = 3) -> CitedAnswer:
    cleaned, new_of_old = _without_markers(generated)
    offsets = _cleaned_offsets(attribution.tokens, new_of_old)
    sources = np.array([unit.source for unit in attribution.units], dtype=np.int64)
    inserts: list[tuple[int, str, dict[str, Any]]] = []
    for start, end, point in _sentences(cleaned):
        # a marker goes between tokens: one that straddles the point pushes it to its end
        point = max([span[1] for span in offsets if span is not None and span[0] < point < span[1]], default=point)
        rows = [i for i, span in enumerate(offsets) if span is not None and start <= span[0] < end]
        if not rows or not len(sources):
            continue
        mass = np.bincount(sources, weights=attribution.scores[rows].sum(axis=0), minlength=int(sources.max()) + 1)
        if mass.max() <= 0:
            continue
        ranked = [int(s) for s in np.argsort(-mass, kind="stable")[:limit] if mass[s] >= share * mass.max()]
        numbers = [s + 1 for s in ranked]
        inserts.append((point, "".join(f"[{n}]" for n in numbers), {"start": start, "end": end, "sources": numbers}))
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
