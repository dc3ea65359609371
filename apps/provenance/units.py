"""The attributable units of an answer's sources, from the sources as the answer stores them.

A chunk's units are its sentences (the offsets ingestion recorded); a table row's are its cells
(``column: value`` pieces of the row's text); an image's text is one unit. A source without
recorded sentences is one unit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from apps.provenance.types import Unit

# A table row is rendered "<title> / <table>, row <n>: <column>: <value>; <column>: <value>."
_ROW_CELLS = re.compile(r", row \d+: ")


def _cells(text: str, source: int) -> list[Unit]:
    head = _ROW_CELLS.search(text)
    if head is None:
        return [Unit(source, 0, 0, len(text))]
    units = []
    position = head.end()
    body_end = len(text) - 1 if text.endswith(".") else len(text)
    for index, piece in enumerate(text[position:body_end].split("; ")):
        column = piece.split(": ", 1)[0] if ": " in piece else ""
        units.append(Unit(source, index, position, position + len(piece), column))
        position += len(piece) + 2
    return units


def unit_shown(source: dict[str, Any], unit: Unit) -> bool:
    """Whether the prompt showed ``unit`` (a source records ``shown`` when it showed only some sentences)."""
    shown = source.get("shown")
    return shown is None or unit.index in shown


def unit_texts(sources: Sequence[dict[str, Any]], units: Sequence[Unit]) -> list[str]:
    """Each unit's own text, cut from its source's text ("" for a sentence the prompt did not show:
    the model never read it, so nothing it wrote can be copied from it)."""
    texts = []
    for unit in units:
        source = sources[unit.source]
        texts.append((source.get("text") or "")[unit.start : unit.end] if unit_shown(source, unit) else "")
    return texts


def source_units(sources: Sequence[dict[str, Any]]) -> list[Unit]:
    """Every unit of every source, in source order then text order."""
    units: list[Unit] = []
    for position, source in enumerate(sources):
        text = source.get("text") or ""
        if source.get("kind") == "row":
            units.extend(_cells(text, position))
            continue
        spans = [(int(start), int(end)) for start, end in source.get("sentences") or [] if end > start]
        if source.get("kind") == "image" or not spans:
            spans = [(0, len(text))]
        units.extend(Unit(position, index, start, end) for index, (start, end) in enumerate(spans))
    return units
