"""What the search page shows of an answer: numbered sources with the supporting sentence
marked, table rows as small tables with the cited cell marked, and the latency bar.

Pure functions of the stored answer (``Answer.sources``, ``timings_ms``) and its token
provenance (``apps.provenance.services.answer_token_provenance``); the templates escape every
piece of text they are given.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apps.answers.types import STAGES
from apps.core.language import has_cjk, words
from apps.provenance.units import source_units

EXTRA_STAGES = ("queue", "attribution")


@dataclass(frozen=True)
class Piece:
    """A run of a source's text; ``marked`` when it is the supporting sentence."""

    text: str
    marked: bool = False


@dataclass(frozen=True)
class Cell:
    column: str
    value: str
    marked: bool = False


@dataclass(frozen=True)
class Stage:
    """One stage of the latency bar: its time and its share of the total (percent)."""

    name: str
    ms: float
    percent: float


def supported_spans(tokens: Iterable[Mapping[str, Any]]) -> dict[int, tuple[int, int]]:
    """Per source number, the span of its text that the answer's tokens lean on most (summed scores)."""
    mass: dict[int, dict[tuple[int, int], float]] = defaultdict(lambda: defaultdict(float))
    for token in tokens:
        for support in token.get("sources") or []:
            span = (int(support["start"]), int(support["end"]))
            mass[int(support["number"])][span] += float(support.get("score") or 0.0)
    return {number: max(spans.items(), key=lambda item: (item[1], -item[0][0]))[0] for number, spans in mass.items()}


def _words(text: str) -> set[str]:
    """Words of three letters or more, and Chinese words of two characters or more."""
    return {word for word in words(text) if len(word) > 2 or (len(word) == 2 and has_cjk(word))}


def best_span(text: str, spans: Sequence[Sequence[int]], query: str) -> tuple[int, int] | None:
    """The span (of ``spans``) sharing most words with ``query``; the first one on a tie; None without spans."""
    wanted = _words(query)
    best: tuple[int, int] | None = None
    best_overlap = -1
    for start, end in spans:
        overlap = len(wanted & _words(text[start:end]))
        if end > start and overlap > best_overlap:
            best, best_overlap = (int(start), int(end)), overlap
    return best


def highlight(text: str, span: tuple[int, int] | None) -> list[Piece]:
    """``text`` cut into pieces, the one inside ``span`` marked (no span, or one outside the text: no mark)."""
    if span is None or not 0 <= span[0] < span[1] <= len(text):
        return [Piece(text)] if text else []
    start, end = span
    pieces = [Piece(text[:start]), Piece(text[start:end], marked=True), Piece(text[end:])]
    return [piece for piece in pieces if piece.text]


def row_cells(text: str, span: tuple[int, int] | None, query: str = "") -> list[Cell]:
    """A table row's ``column: value`` cells (as provenance cuts them), the cell holding ``span``
    marked, else the cell sharing most words with ``query``. [] when the text is not a row's."""
    units = [unit for unit in source_units([{"kind": "row", "text": text}]) if unit.label or unit.start]
    if not units:
        return []
    if span is not None:
        start, end = span
        marked = next((i for i, u in enumerate(units) if u.start <= start < u.end or start <= u.start < end), -1)
    else:
        best = best_span(text, [(u.start, u.end) for u in units], query)
        marked = next((i for i, u in enumerate(units) if best == (u.start, u.end)), -1)
    cells = []
    for index, unit in enumerate(units):
        piece = text[unit.start : unit.end]
        value = piece.split(": ", 1)[1] if unit.label and ": " in piece else piece
        cells.append(Cell(unit.label, value, marked=index == marked))
    return cells


def latency_stages(timings_ms: Mapping[str, Any]) -> list[Stage]:
    """The answer's stages in pipeline order (those that took time), each with its share of the total."""
    names = [name for name in (*STAGES, *EXTRA_STAGES) if name in timings_ms]
    names += sorted(name for name in timings_ms if name not in names)
    times = [(name, max(0.0, float(timings_ms[name] or 0.0))) for name in names]
    total = sum(ms for _, ms in times)
    if total <= 0:
        return []
    return [Stage(name, round(ms, 1), round(ms * 100 / total, 2)) for name, ms in times if ms > 0]


def source_views(
    sources: Sequence[Mapping[str, Any]], tokens: Sequence[Mapping[str, Any]], query: str
) -> list[dict[str, Any]]:
    """The sources as the page shows them: text cut into pieces with the supporting sentence marked
    (from token provenance where there is one, else the sentence closest to ``query``), rows as cells."""
    supported = supported_spans(tokens)
    views = []
    for source in sources:
        text = str(source.get("text") or "")
        number = int(source["number"])
        span = supported.get(number)
        if span is None and source.get("kind") == "chunk":
            span = best_span(text, source.get("sentences") or [], query)
        cells = row_cells(text, span, query) if source.get("kind") == "row" else []
        views.append(
            {
                **source,
                "pieces": highlight(text, span),
                "cells": cells,
                "span": span,
                "from_provenance": number in supported,
            }
        )
    return views
