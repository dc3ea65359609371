"""An answer's citable units: its sentences, and each list item on its own line.

Pure rules, no model. A sentence ends at "!" or "?" (unless a lower-case word follows), at "."
(or an ellipsis) followed by a capital letter, a digit or a line break, and at the end of the
text; a closing quote or bracket right after the punctuation stays with the sentence. A period
does not end a sentence after an initial ("E. W. Scripps"), a title or other abbreviation that
introduces what follows ("Dr.", "St.", "e.g.", "Jan.", "No. 5"), or a list number ("1." at the
start of a line, of a sentence or after a colon). Abbreviations that may close a sentence
("Inc.", "Co.", "etc.", "U.S.", "p.m.", and initials) end one only before a common sentence
opener ("The", "It", ...). Decimals and versions ("3.5", "v2.1") never qualify: their period is
not followed by a space. A line break ends a unit without punctuation when it closes a list
item, precedes one, closes a heading or a line ending in ":", or starts a blank line.

The spans tile the text: each starts where the previous one ended (so the whitespace between
two sentences belongs to the second) and ends after its last visible character.
"""

from __future__ import annotations

import re
from typing import NamedTuple

TERMINAL = re.compile(r"[.!?\u2026]+([\"')\]}\u00bb\u201d\u2019*_]*)(?=\s|$)")
# A line that is a list item: a bullet, or a number, lower-case letter or roman numeral with "."
# or ")" ("1.", "2)", "a)", "iv."), or a capital with ")" ("A." is left out: it may be an initial).
LIST_ITEM = re.compile(r"[ \t]*(?:[-*+\u2022]|\(?(?:\d{1,3}|[a-z]|[ivx]{1,4})[.)]|\(?[A-Z]\))[ \t]")
LIST_NUMBER = re.compile(r"\d{1,3}|[A-Za-z]|[ivxIVX]{1,4}")  # a word that can number a list item
DOTTED = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")  # U.S, a.m, e.g before their last period
OPENERS = "\"'([{\u00ab\u201c\u2018*_"
CLOSERS = "\"')]}\u00bb\u201d\u2019*_"
END_MARKS = ".!?\u2026:;"  # a marker goes before these at a unit's end


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Abbreviations that introduce what follows: their period never ends a sentence.
LEADING = _words(
    "mr mrs ms mx dr prof st mt gen col capt lt sgt gov sen rep rev hon fr vs v e.g i.e cf approx ca"
    " jan feb mar apr jun jul aug sep sept oct nov dec"
)
# Abbreviations before a number ("No. 5", "Vol. 2", "p. 12"): no sentence end before a digit.
NUMBERING = _words("no nos vol vols fig figs p pp ch sec art op")
# Abbreviations that may close a sentence: an end only before a common sentence opener.
TRAILING = _words("inc ltd co corp jr sr etc esq bros llc plc al ft")
# Words that open sentences far more often than they follow an abbreviation ("A" and "I" are left
# out: they are initials too, as in "E. A. Poe").
OPENING_WORDS = _words(
    "the an it its he his she her they their there these those this that we our you your"
    " in on at as after before by for from when while however but and so then also both each"
    " today since although though if many most some other such during later"
)


class Sentence(NamedTuple):
    start: int
    end: int
    point: int  # where a citation marker goes: before the final punctuation, or at ``end``


def _word_before(text: str, at: int) -> str:
    """The word that ends at ``at`` (back to the previous whitespace), without opening punctuation."""
    start = at
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return text[start:at].lstrip(OPENERS)


def _next_word(text: str, at: int) -> tuple[str, str]:
    """The whitespace after ``at``, and the word after it without opening punctuation ("": none)."""
    rest = text[at:]
    visible = rest.lstrip()
    words = visible.lstrip(OPENERS).split(maxsplit=1)
    return rest[: len(rest) - len(visible)], words[0] if words else ""


def _abbreviation_kind(word: str) -> str:
    """How a period after ``word`` reads: "leading" (never an end), "numbering" (no end before a
    number), "trailing" (an end only before a sentence opener; initials too) or "" (a plain word)."""
    lower = word.lower()
    single = len(word) == 1 and word.isalpha()
    if lower in LEADING or (single and word.islower()):
        return "leading"
    if lower in NUMBERING:
        return "numbering"
    if lower in TRAILING or DOTTED.fullmatch(word) or single:
        return "trailing"
    return ""


def _is_list_number(text: str, dot: int, unit_start: int) -> bool:
    """Whether the period at ``dot`` closes a list number: a short number or letter at the start
    of a line, of the current unit, or after a colon."""
    word = _word_before(text, dot)
    if not LIST_NUMBER.fullmatch(word):
        return False
    word_start = dot - len(word)
    before = text[unit_start:word_start].rstrip(OPENERS).strip()
    line_start = text.rfind("\n", 0, word_start) + 1
    return not before or before.endswith(":") or not text[line_start:word_start].strip(" \t" + OPENERS)


def _period_ends(word: str, following: str) -> bool:
    """Whether a period after ``word``, then a space and ``following``, ends a sentence."""
    kind = _abbreviation_kind(word)
    if kind == "leading" or (kind == "numbering" and following[:1].isdigit()):
        return False
    if kind == "trailing":
        return following[:1].isupper() and following.lower().rstrip(",;:") in OPENING_WORDS
    return following[:1].isupper() or following[:1].isdigit()


def _punctuation_ends(text: str, match: re.Match[str], unit_start: int) -> bool:
    """Whether a run of final punctuation (with its closing quotes or brackets) ends a sentence."""
    run = match.group(0)[: match.start(1) - match.start()]
    if run == "." and not match.group(1) and _is_list_number(text, match.start(), unit_start):
        return False
    gap, following = _next_word(text, match.end())
    if "\n" in gap or not following:
        return True
    if "!" in run or "?" in run:
        return not following[:1].islower()
    if run == ".":
        return _period_ends(_word_before(text, match.start()), following)
    return following[:1].isupper() or following[:1].isdigit()  # an ellipsis


def _punctuation_ends_all(text: str) -> set[int]:
    ends: set[int] = set()
    unit_start = 0
    for match in TERMINAL.finditer(text):
        if _punctuation_ends(text, match, unit_start):
            ends.add(match.end())
            unit_start = match.end()
    return ends


def _line_break_ends(line: str, next_line: str, *, blank: bool) -> bool:
    """Whether the break after ``line`` ends a unit even without final punctuation: after a list
    item, a heading or a line ending in ":", before a list item, or before a blank line."""
    stripped = line.strip()
    if not stripped:
        return False
    return (
        blank
        or bool(LIST_ITEM.match(line))
        or bool(LIST_ITEM.match(next_line))
        or stripped.startswith("#")
        or stripped.endswith(":")
    )


def _line_ends(text: str) -> set[int]:
    """Unit ends at line breaks: where the visible text of each line whose break ends a unit stops."""
    ends: set[int] = set()
    lines = text.split("\n")
    at = 0
    for index, line in enumerate(lines[:-1]):
        later = lines[index + 1 :]
        next_line = next((candidate for candidate in later if candidate.strip()), "")
        if _line_break_ends(line, next_line, blank=not later[0].strip()):
            ends.add(at + len(line.rstrip()))
        at += len(line) + 1
    return ends


def _marker_point(text: str, start: int, end: int) -> int:
    """Before the unit's final punctuation; at its end after a closing quote or bracket, after an
    abbreviation's period ("Co. [2]"), or when it has no final punctuation."""
    body = text[start:end]
    if body.endswith(tuple(CLOSERS)):
        return end
    trimmed = body.rstrip(END_MARKS)
    abbreviated = _abbreviation_kind(_word_before(body, len(trimmed))) in ("leading", "trailing")
    if body.endswith(".") and len(trimmed) == len(body) - 1 and abbreviated:
        return end
    return start + len(trimmed) if trimmed.strip() else end


def sentence_spans(text: str) -> list[Sentence]:
    """The citable units of ``text`` in order, each as (start, end, marker insertion point)."""
    limit = len(text.rstrip())
    ends = sorted(end for end in _punctuation_ends_all(text) | _line_ends(text) | {limit} if 0 < end <= limit)
    spans, start = [], 0
    for end in ends:
        if text[start:end].strip():
            spans.append(Sentence(start, end, _marker_point(text, start, end)))
            start = end
    return spans
