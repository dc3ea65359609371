"""What the document viewer (``/documents/<id>/``) reads: a document the reader may read, its text in
order with the cited sentence marked, its tables with the cited row and cell, its images with their
labels and OCR text, and, for a PDF, which page each part is on.

Every read passes the reader's collections into its Cypher (``VIEW_*`` in ``apps.graph.cypher``): a
document of another collection is not found, exactly like a missing one. Sizes are bounded: a window
of ``CHUNK_WINDOW`` chunks (around the cited one) and ``ROW_WINDOW`` rows per table (around the cited
row), ``IMAGE_LIMIT`` images.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from neo4j import Driver

from apps.answers.display import Cell, Piece, highlight, row_cells
from apps.graph import cypher
from apps.graph.db import graph_read

CHUNK_WINDOW = 120
ROW_WINDOW = 40
IMAGE_LIMIT = 60

Collections = Sequence[str] | None


@dataclass(frozen=True)
class Citation:
    """What a link cites: a unit of the document and, in its text, the cited span (or none)."""

    unit: str = ""
    start: int | None = None
    end: int | None = None

    @property
    def span(self) -> tuple[int, int] | None:
        if self.start is None or self.end is None or not 0 <= self.start < self.end:
            return None
        return (self.start, self.end)


@dataclass
class Passage:
    id: str
    ord: int
    page: int | None
    pieces: list[Piece]
    cited: bool = False
    picture: tuple[int, int] | None = None  # the size of its page's picture, where there is one

    @property
    def anchor(self) -> str:
        """The element's id: ``cited`` for a cited passage with no sentence marked (the mark carries it),
        else its unit's (on the first piece of a chunk; the rest of it has none)."""
        if self.cited and not any(p.marked for p in self.pieces):
            return "cited"
        return f"unit-{self.id}" if self.id else ""


@dataclass
class TableRow:
    id: str
    idx: int
    cells: list[Cell]
    cited: bool = False


@dataclass
class TableView:
    id: str
    name: str
    columns: list[str]
    row_count: int
    first: int
    rows: list[TableRow] = field(default_factory=list)
    cited: bool = False


def document_read(*, driver: Driver, document_id: str, collections: Collections) -> dict[str, Any] | None:
    """The document and its unit counts, or None when it is missing or its collection is not readable."""
    rows = graph_read(
        driver,
        cypher.VIEW_DOCUMENT,
        id=document_id,
        collections=None if collections is None else list(collections),
    )
    return rows[0] if rows else None


def unit_locate(*, driver: Driver, document_id: str, unit: str) -> dict[str, Any] | None:
    """Where ``unit`` sits in the document (label, position, table, page); None when it is not the document's."""
    if not unit:
        return None
    rows = graph_read(driver, cypher.VIEW_UNIT, document_id=document_id, unit=unit)
    return rows[0] if rows else None


def window(position: int | None, count: int, size: int) -> tuple[int, int]:
    """The ``size``-long range of positions [first, last) holding ``position`` near its middle (the
    start when there is none), within [0, count)."""
    if count <= size or position is None:
        return 0, size
    first = max(0, min(position - size // 2, count - size))
    return first, first + size


def _page_at(offset: int, starts: Sequence[int], numbers: Sequence[int]) -> int | None:
    """The number of the page holding ``offset`` (the last page starting at or before it)."""
    number = None
    for start, page in zip(starts, numbers, strict=False):
        if start > offset:
            break
        number = page
    return number


def _cut(span: tuple[int, int] | None, low: int, high: int) -> tuple[int, int] | None:
    """``span`` (absolute offsets) within [low, high), relative to low; None when they do not meet."""
    if span is None or span[1] <= low or span[0] >= high:
        return None
    return (max(span[0], low) - low, min(span[1], high) - low)


def passages_of(
    rows: Sequence[Mapping[str, Any]], citation: Citation, *, page_starts: Sequence[int], page_numbers: Sequence[int]
) -> list[Passage]:
    """The chunks' text in order without their overlaps (each piece of text once, in the first chunk
    that holds it), cut at page starts, the cited span marked where it falls; a chunk cited without a
    span is outlined whole."""
    cited_at: tuple[int, int] | None = None
    for row in rows:
        if row["id"] == citation.unit and citation.span is not None and row.get("start") is not None:
            cited_at = (int(row["start"]) + citation.span[0], int(row["start"]) + citation.span[1])
    passages: list[Passage] = []
    covered = -1
    for row in rows:
        text = str(row.get("text") or "")
        is_cited = row["id"] == citation.unit
        if row.get("start") is None:  # a chunk without offsets: shown whole, its own span marked
            pieces = highlight(text, citation.span if is_cited else None)
            passages.append(Passage(str(row["id"]), int(row.get("ord") or 0), row.get("page"), pieces, is_cited))
            continue
        start, end = int(row["start"]), int(row["start"]) + len(text)
        begin = max(start, covered)
        covered = max(covered, end)
        if begin >= end:
            continue
        cuts = [begin, *(p for p in page_starts if begin < p < end), end]
        named = False
        for low, high in itertools.pairwise(cuts):
            mark = _cut(cited_at, low, high)
            piece = text[low - start : high - start]
            if not piece.strip():
                continue
            page = _page_at(low, page_starts, page_numbers) if page_starts else row.get("page")
            passages.append(
                Passage(
                    "" if named else str(row["id"]),
                    int(row.get("ord") or 0),
                    page,
                    highlight(piece, mark),
                    mark is not None or (is_cited and cited_at is None),
                )
            )
            named = True
    return passages


def _row(row: Mapping[str, Any], citation: Citation) -> TableRow:
    cited = row["id"] == citation.unit
    text = str(row.get("text") or "")
    cells = row_cells(text, citation.span) if cited else [Cell(c.column, c.value) for c in row_cells(text, None)]
    return TableRow(str(row["id"]), int(row.get("idx") or 0), cells, cited)


def document_view(
    *, driver: Driver, document_id: str, collections: Collections, citation: Citation, at: int | None = None
) -> dict[str, Any] | None:
    """Everything the viewer shows of the document, the cited unit marked; None when it is not readable.
    The text's window centres on chunk position ``at`` when given, else on the cited chunk."""
    document = document_read(driver=driver, document_id=document_id, collections=collections)
    if document is None:
        return None
    located = unit_locate(driver=driver, document_id=document_id, unit=citation.unit)
    cited_chunk = located["position"] if located and located["label"] == "Chunk" else None
    first, last = window(cited_chunk if at is None else at, int(document["chunks"]), CHUNK_WINDOW)
    passages = passages_of(
        graph_read(driver, cypher.VIEW_CHUNKS, id=document_id, first=first, last=last),
        citation,
        page_starts=[int(p) for p in document["page_starts"]],
        page_numbers=[int(p) for p in document["page_numbers"]],
    )
    sizes = zip(document["page_widths"], document["page_heights"], strict=False)
    pictures = {number: (int(w), int(h)) for number, (w, h) in enumerate(sizes, start=1)}
    for passage in passages:
        passage.picture = pictures.get(passage.page) if passage.page is not None else None
    windows: dict[str, list[int]] = {}
    if located and located["label"] == "Row" and located["table"]:
        low, high = window(int(located["position"]), 10**9, ROW_WINDOW)
        windows[str(located["table"])] = [low, high]
    tables = [
        TableView(
            id=str(t["id"]),
            name=str(t["name"] or ""),
            columns=[str(c) for c in t["columns"] or []],
            row_count=int(t["row_count"] or 0),
            first=int(t["first"] or 0),
            rows=[_row(r, citation) for r in t["rows"]],
            cited=bool(located and located["table"] == t["id"]),
        )
        for t in graph_read(driver, cypher.VIEW_TABLES, id=document_id, windows=windows, rows=ROW_WINDOW)
    ]
    images = graph_read(driver, cypher.VIEW_IMAGES, id=document_id, limit=IMAGE_LIMIT)
    for image in images:
        image["cited"] = image["id"] == citation.unit
        image["labelled"] = list(zip(image.get("labels") or [], image.get("label_scores") or [], strict=False))
    return {
        "document": document,
        "passages": passages,
        "chunk_window": {"first": first, "last": min(last, int(document["chunks"])), "count": int(document["chunks"])},
        "tables": tables,
        "images": images,
        "located": located,
    }
