"""Rule-based sentence splitting and sentence-aligned chunking (pure Python).

``split_sentences`` finds cut points (after sentence-final punctuation, at
blank lines, around heading and list-item lines) and returns the stripped,
non-empty text between consecutive cuts, so every non-whitespace character
lies in exactly one sentence by construction. ``chunk_text`` packs whole
sentences into chunks of bounded size with a bounded sentence overlap.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence

from apps.ingest.types import PageSpan, TextChunk

Span = tuple[int, int]

# A run of sentence-final punctuation (with any closing quotes or brackets).
_LATIN_END = re.compile(r"[.!?…]+[\"'”\u2019»)\]}]*")
_CJK_END = re.compile(r"[。\uff01\uff1f]+[」』”\u2019\uff09)\]】\u3015》〉\"']*")
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n|\f")
_NEWLINE = re.compile(r"\n")

# Characters that may open a new sentence besides uppercase letters and digits.
_OPENERS = frozenset("\"'“\u2018([«¿¡")

# Words that end with "." without ending the sentence (lowercase, without the final dot).
_ABBREVIATIONS = frozenset(
    {
        "mr", "mrs", "ms", "mx", "dr", "prof", "st", "sr", "jr", "rev", "hon", "gen", "col", "lt", "sgt", "capt",
        "cmdr", "adm", "gov", "sen", "rep", "pres", "supt", "fr", "mt", "ft", "ave", "blvd", "rd",
        "vs", "cf", "al", "approx", "ca", "dept", "est", "jan", "feb", "mar", "apr", "jun", "jul", "aug",
        "sep", "sept", "oct", "nov", "dec",
    }
)  # fmt: skip
# Abbreviations that only hold a sentence together before a number ("No. 5", "pp. 12", "d. 851").
_NUMERIC_ABBREVIATIONS = frozenset(
    {"no", "nos", "vol", "p", "pp", "fig", "figs", "art", "sec", "ch", "eq", "b", "d", "c", "ca", "fl", "r"}
)
_DOTTED = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")  # e.g, i.e, U.S, a.m (the final dot is the match)

_LIST_ITEM = re.compile(r"\s*(?:[-*•‣◦▪\u2013—]|\d{1,3}[.)]|[a-z][.)]|\(\w{1,3}\))\s+\S")
_NUMBERED_HEADING = re.compile(r"(?:\d{1,2}(?:\.\d{1,2})*\.?|[IVXLC]+\.)\s+[^\W\d_]")
_HEADING_MAX_CHARS = 80
_HEADING_MAX_WORDS = 12


def split_sentences(text: str) -> list[Span]:
    """Sentence ``(start, end)`` offsets into ``text``, in order, without surrounding whitespace.

    A sentence ends after ``.``, ``!``, ``?`` or an ellipsis (plus closing quotes or brackets)
    followed by whitespace and an uppercase letter, digit or opening quote/bracket; after the
    CJK full stop, exclamation and question marks whatever follows; at blank lines; and at line
    breaks next to a line that looks like a heading or list item. A ``.`` after a known
    abbreviation ("Dr.", "e.g.", "U.S."), a single-letter initial ("J. R. R.") or inside a
    number ("3.14") does not end one.
    """
    cuts = sorted(set(_cut_points(text)))
    spans: list[Span] = []
    previous = 0
    for cut in [*cuts, len(text)]:
        span = _strip(text, previous, cut)
        if span is not None:
            spans.append(span)
        previous = max(previous, cut)
    return spans


def chunk_text(text: str, *, size: int, overlap: int, pages: Sequence[PageSpan] = ()) -> list[TextChunk]:
    """Pack whole sentences greedily into chunks of at most ``size`` characters.

    A sentence longer than ``size`` is cut at whitespace (or, lacking any, hard) into pieces of
    at most ``size`` characters that count as sentences. Each chunk after the first repeats the
    previous chunk's trailing sentences, as many as fit in ``overlap`` characters (measured from
    the first repeated sentence's start to the previous chunk's end) while leaving room for at
    least one new sentence, so every chunk adds text and the loop always ends. ``page`` is the
    number of the page span holding the chunk's first character (else the last page starting
    before it; None without pages or before the first page).
    """
    if size < 1:
        raise ValueError(f"chunk size must be at least 1, got {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"chunk overlap must be in [0, size), got {overlap} with size {size}")
    units = [piece for start, end in split_sentences(text) for piece in _pieces(text, start, end, size)]
    page_of = _PageFinder(pages)
    chunks: list[TextChunk] = []
    first = 0
    while first < len(units):
        last = _pack(units, first, size)
        chunks.append(_make_chunk(text, units[first : last + 1], len(chunks), page_of))
        if last == len(units) - 1:
            break
        first = _overlap_start(units, first, last, size, overlap)
    return chunks


# --- sentence cut points ---------------------------------------------------------------------


def _cut_points(text: str) -> Iterator[int]:
    yield from _punctuation_cuts(text)
    yield from (match.end() for match in _CJK_END.finditer(text))
    yield from (match.start() for match in _BLANK_LINE.finditer(text))
    yield from _line_cuts(text)


def _punctuation_cuts(text: str) -> Iterator[int]:
    for match in _LATIN_END.finditer(text):
        end = match.end()
        following = _next_visible(text, end)
        if following is None or following == end:
            continue  # end of text, or no whitespace after the mark ("3.14", "e.g.x")
        if not _opens_sentence(text[following]):
            continue
        if match.group() == "." and _holds_together(text, match.start(), text[following]):
            continue
        yield end


def _next_visible(text: str, index: int) -> int | None:
    """Index of the first non-whitespace character at or after ``index``."""
    while index < len(text):
        if not text[index].isspace():
            return index
        index += 1
    return None


def _opens_sentence(char: str) -> bool:
    return char.isupper() or char.isdigit() or char in _OPENERS or _is_cjk(char)


def _is_cjk(char: str) -> bool:
    return "\u3040" <= char <= "\u30ff" or "\u3400" <= char <= "\u9fff" or "\uac00" <= char <= "\ud7af"


def _holds_together(text: str, dot: int, following: str) -> bool:
    """True when the single ``.`` at ``dot`` ends an abbreviation or initial, not a sentence."""
    word = _word_before(text, dot)
    lowered = word.lower()
    if lowered in _ABBREVIATIONS or _DOTTED.fullmatch(word):
        return True
    if lowered in _NUMERIC_ABBREVIATIONS and following.isdigit():
        return True
    return len(word) == 1 and word.isalpha() and word.isupper()


def _word_before(text: str, index: int) -> str:
    start = index
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return text[start:index].lstrip("\"'“\u2018([«")


def _line_cuts(text: str) -> Iterator[int]:
    """Cut at a line break that ends, or starts, a heading or list-item line."""
    line_start = 0
    for match in _NEWLINE.finditer(text):
        line = text[line_start : match.start()].strip()
        line_start = match.end()
        next_line = _line_at(text, line_start).strip()
        if line and next_line and _is_boundary_line(line, next_line):
            yield match.start()


def _line_at(text: str, start: int) -> str:
    end = text.find("\n", start)
    return text[start:] if end < 0 else text[start:end]


def _is_boundary_line(line: str, next_line: str) -> bool:
    if _is_list_item(line) or _is_list_item(next_line) or next_line.startswith("#"):
        return True
    return _opens_sentence(next_line[0]) and _is_heading(line)


def _is_list_item(line: str) -> bool:
    return _LIST_ITEM.match(line) is not None


def _is_heading(line: str) -> bool:
    """A short line that is markdown, numbered, all caps or title case, and not mid-clause."""
    if line.startswith("#"):
        return True
    words = line.split()
    if len(line) > _HEADING_MAX_CHARS or len(words) > _HEADING_MAX_WORDS or line[-1] in ",;-\u2013—(/&":
        return False
    if _NUMBERED_HEADING.match(line) or (line.isupper() and len(line) > 1):
        return True
    return _is_title_case(words)


def _is_title_case(words: list[str]) -> bool:
    """Every word of four or more letters is capitalised, and so is the last word."""
    long_words = [word for word in words if word.isalpha() and len(word) >= 4]
    if not long_words or not all(word[0].isupper() for word in long_words):
        return False
    last = words[-1]
    return not (last[0].isalpha() and last[0].islower())


def _strip(text: str, start: int, end: int) -> Span | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


# --- chunk packing ---------------------------------------------------------------------------


def _pieces(text: str, start: int, end: int, size: int) -> Iterator[Span]:
    """Split ``text[start:end]`` at whitespace into stripped pieces of at most ``size`` chars."""
    while end - start > size:
        cut = _last_space(text, start + 1, start + size)
        if cut is None:
            yield (start, start + size)
            next_start = start + size
        else:
            piece = _strip(text, start, cut)
            if piece is not None:
                yield piece
            next_start = cut
        stripped = _strip(text, next_start, end)
        if stripped is None:
            return
        start = stripped[0]
    yield (start, end)


def _last_space(text: str, low: int, high: int) -> int | None:
    """Largest ``i`` in ``[low, high]`` with ``text[i]`` whitespace."""
    for index in range(high, low - 1, -1):
        if text[index].isspace():
            return index
    return None


def _pack(units: Sequence[Span], first: int, size: int) -> int:
    """Index of the last unit that still fits in a chunk starting at ``units[first]``."""
    last = first
    while last + 1 < len(units) and units[last + 1][1] - units[first][0] <= size:
        last += 1
    return last


def _overlap_start(units: Sequence[Span], first: int, last: int, size: int, overlap: int) -> int:
    """First unit of the next chunk: the earliest of the previous chunk's trailing units
    that fit in ``overlap`` and leave room for ``units[last + 1]``."""
    start = last + 1
    limit = units[last + 1][1]
    while start - 1 > first:
        candidate = units[start - 1][0]
        if units[last][1] - candidate > overlap or limit - candidate > size:
            break
        start -= 1
    return start


def _make_chunk(text: str, units: Sequence[Span], ord_: int, page_of: _PageFinder) -> TextChunk:
    start, end = units[0][0], units[-1][1]
    sentences = tuple((unit_start - start, unit_end - start) for unit_start, unit_end in units)
    return TextChunk(ord=ord_, text=text[start:end], start=start, end=end, sentences=sentences, page=page_of(start))


class _PageFinder:
    """Page number for an offset: the last page span starting at or before it.

    With non-overlapping spans that is the span holding the offset, or the page before a gap.
    """

    def __init__(self, pages: Sequence[PageSpan]) -> None:
        ordered = sorted(pages, key=lambda page: (page.start, page.end))
        self._starts = [page.start for page in ordered]
        self._numbers = [page.number for page in ordered]

    def __call__(self, offset: int) -> int | None:
        index = bisect.bisect_right(self._starts, offset) - 1
        return self._numbers[index] if index >= 0 else None
