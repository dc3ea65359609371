"""HTML pages: the visible text, one line per block, and every ``<table>`` as a ParsedTable.

Parsed with lxml through BeautifulSoup (fast on large pages), falling back to the
standard library's parser for markup lxml refuses. Invisible content (scripts, styles, ``<head>``, templates,
``hidden`` elements, comments) is dropped; the ``<title>`` (else the first
``<h1>``) becomes the title. Within a block, whitespace is collapsed; table
cells of one row are joined with " | ". The tree is walked iteratively, so
deep nesting cannot overflow the stack.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bs4 import BeautifulSoup
from bs4.dammit import EncodingDetector
from bs4.element import NavigableString, PageElement, PreformattedString, Tag

from apps.ingest.parsing.tables import build_table, check_row_count
from apps.ingest.parsing.text import (
    clean_title,
    collapse_whitespace,
    decode_text,
    file_stem,
    normalise_newlines,
    sha256_hex,
)
from apps.ingest.types import CORRUPT_FILE, EMPTY_FILE, TOO_LARGE, IngestError, Limits, ParsedDocument, ParsedTable

HTML_MIME = "text/html"
MAX_TABLE_COLUMNS = 1000
_MAX_SPAN = 1000
_INVISIBLE = ("script", "style", "noscript", "template", "head", "title")
_CELLS = frozenset({"td", "th"})
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "dialog", "div",
        "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5",
        "h6", "header", "hgroup", "hr", "html", "legend", "li", "main", "nav", "ol", "p", "section",
        "summary", "table", "tbody", "tfoot", "thead", "tr", "ul",
    }
)  # fmt: skip
_DIGITS = re.compile(r"\d+")


def _soup(markup: str) -> BeautifulSoup:
    # bs4 warns when markup without "<" looks like a URL or a file name; a leading empty
    # comment (dropped like every comment) avoids that without touching global warning filters.
    try:
        return BeautifulSoup("<!---->" + markup, "lxml")
    except Exception:  # lxml refuses some markup (e.g. control characters): use the lenient parser
        pass
    try:
        return BeautifulSoup("<!---->" + markup, "html.parser")
    except Exception as exc:  # html.parser is lenient; this is a last resort
        raise IngestError(CORRUPT_FILE, f"the HTML cannot be parsed: {exc}") from exc


def parse_html(path: str, data: bytes, limits: Limits) -> ParsedDocument:
    declared = EncodingDetector.find_declared_encoding(data, is_html=True)
    markup = decode_text(data, declared=declared)
    soup = _soup(markup)
    page = _Walker()
    page.walk(soup)
    text = page.text()
    if not text:
        raise IngestError(EMPTY_FILE, "the page has no visible text")
    return ParsedDocument(
        path=path,
        mime=HTML_MIME,
        sha256=sha256_hex(data),
        size=len(data),
        text=text,
        tables=_tables(page.tables, limits),
        title=page.title or page.first_heading or file_stem(path),
    )


class _Walker:
    """One pass over the tree: visible text as lines, the tables met, the title.

    Inline text gathers into the current line; block elements and ``<br>``
    end it. Invisible elements are skipped with everything inside them.
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.tables: list[Tag] = []
        self.title = ""
        self.first_heading = ""
        self._parts: list[str] = []
        self._has_text = False

    def text(self) -> str:
        return "\n".join(self.lines)

    def walk(self, root: Tag) -> None:
        stack: list[tuple[PageElement, bool]] = [(root, False)]
        while stack:
            node, closing = stack.pop()
            if closing:
                self._end_line()
            elif isinstance(node, Tag):
                self._open(node, stack)
            elif isinstance(node, NavigableString) and not isinstance(node, PreformattedString):
                self._add(str(node))
        self._end_line()

    def _open(self, tag: Tag, stack: list[tuple[PageElement, bool]]) -> None:
        name = tag.name
        if name in _INVISIBLE or tag.has_attr("hidden"):
            self._note_title(tag)
            return
        if name == "br":
            self._end_line()
            return
        if name == "pre":
            self._add_preformatted(tag.get_text())
            return
        if name == "table":
            self.tables.append(tag)
        elif name == "h1" and not self.first_heading:
            self.first_heading = clean_title(tag.get_text(" "))
        elif name in _CELLS and self._has_text:
            self._parts.append(" | ")
        if name in _BLOCKS:
            self._end_line()
            stack.append((tag, True))
        stack.extend((child, False) for child in reversed(tag.contents))

    def _note_title(self, tag: Tag) -> None:
        if self.title or tag.name not in ("title", "head"):
            return
        title = tag if tag.name == "title" else tag.find("title")
        if isinstance(title, Tag):
            self.title = clean_title(title.get_text(" "))

    def _add(self, text: str) -> None:
        self._parts.append(text)
        self._has_text = self._has_text or not text.isspace()

    def _end_line(self) -> None:
        line = collapse_whitespace("".join(self._parts)) if self._has_text else ""
        self._parts.clear()
        self._has_text = False
        if line:
            self.lines.append(line)

    def _add_preformatted(self, text: str) -> None:
        self._end_line()
        lines = [line.rstrip() for line in normalise_newlines(text).split("\n")]
        while lines and not lines[-1]:
            lines.pop()
        while lines and not lines[0]:
            lines.pop(0)
        self.lines.extend(lines)


def visible_text(root: Tag) -> str:
    """The visible text under ``root``, block elements on lines of their own."""
    walker = _Walker()
    walker.walk(root)
    return walker.text()


# -- tables --------------------------------------------------------------------


def _tables(elements: list[Tag], limits: Limits) -> tuple[ParsedTable, ...]:
    """Every table with at least one non-empty cell, named "table 1", "table 2", ..."""
    tables: list[ParsedTable] = []
    for element in elements:
        name = f"table {len(tables) + 1}"
        rows = [row for row in _grid(element, name) if any(cell.strip() for cell in row)]
        if not rows:
            continue
        check_row_count(len(rows) - 1, limits, name)
        tables.append(build_table(name, rows[0], rows[1:]))
    return tuple(tables)


def _rows(table: Tag) -> list[Tag]:
    """The table's own ``<tr>`` elements, in order (not those of tables nested in its cells)."""
    rows: list[Tag] = []
    stack: list[PageElement] = list(reversed(table.contents))
    while stack:
        node = stack.pop()
        if not isinstance(node, Tag) or node.name == "table" or node.name in _INVISIBLE:
            continue
        if node.name == "tr":
            rows.append(node)
        else:
            stack.extend(reversed(node.contents))
    return rows


def _grid(table: Tag, name: str) -> list[list[str]]:
    """The cell texts of the table's rows, spans expanded."""
    spans: dict[int, tuple[int, str]] = {}  # column -> (rows still covered, text)
    grid: list[list[str]] = []
    for row in _rows(table):
        cells = [
            (collapse_whitespace(visible_text(cell)), _span(cell, "colspan"), _span(cell, "rowspan"))
            for cell in row.contents
            if isinstance(cell, Tag) and cell.name in _CELLS
        ]
        grid.append(_expand_row(cells, spans))
        if len(grid[-1]) > MAX_TABLE_COLUMNS:
            raise IngestError(TOO_LARGE, f"{name} has more than {MAX_TABLE_COLUMNS} columns")
    return grid


def _expand_row(cells: Sequence[tuple[str, int, int]], spans: dict[int, tuple[int, str]]) -> list[str]:
    """One row of the grid: cells repeated over their colspan, gaps filled from rowspans above."""
    out: list[str] = []

    def take_spans_until(limit: float) -> None:
        while len(out) < limit and len(out) in spans:
            column = len(out)
            left, text = spans.pop(column)
            out.append(text)
            if left > 1:
                spans[column] = (left - 1, text)

    for text, colspan, rowspan in cells:
        take_spans_until(float("inf"))
        for _ in range(colspan):
            if rowspan > 1:
                spans[len(out)] = (rowspan - 1, text)
            out.append(text)
            if len(out) > MAX_TABLE_COLUMNS:
                return out
    for column in sorted(spans):
        if column >= len(out):
            out.extend([""] * (column - len(out)))
            take_spans_until(column + 1)
    return out


def _span(cell: Tag, attribute: str) -> int:
    """A colspan/rowspan value clamped to 1..1000 (missing, zero or junk means 1)."""
    match = _DIGITS.search(str(cell.get(attribute) or ""))
    value = int(match.group()) if match else 1
    return min(max(value, 1), _MAX_SPAN)
