"""Spans of a text that may be names: the candidates that entity linking looks up.

Used for a question (``apps.answers.linking``) and for a passage (the title entities it names,
``graph_build.title_links``): every run of up to ``max_words`` words that starts and ends with a
capitalised word or a number, inside one sentence. The text of a span is the text's own slice
("Leland, North Carolina" keeps its comma), so it normalises exactly as an entity name does.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\S+")
# Quotes, brackets and stops around a word are not part of it.
EDGE_PUNCTUATION = "\"'\u201c\u201d\u2018\u2019\u00ab\u00bb()[]{},;:?!."
_SENTENCE_END = (".", "!", "?", ";", ":")
_ABBREVIATION_LETTERS = 3  # "St." "Dr." "Co." do not end a sentence
_OPENERS = "\"'\u201c\u2018\u00ab([{"
_CLOSERS = "\"'\u201d\u2019\u00bb)]}"


def _words(text: str) -> list[tuple[int, int, bool, bool]]:
    """(start, end, opens, closes) of each word without the punctuation around it: ``opens`` when a
    quote or bracket comes before it, ``closes`` when one comes after it or it ends a sentence (a
    span neither continues past an opening nor past a closing)."""
    words = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        stripped = token.strip(EDGE_PUNCTUATION)
        if not stripped:
            words.append((match.start(), match.start(), True, True))
            continue
        lead = token.index(stripped)
        start = match.start() + lead
        tail = token[lead + len(stripped) :]
        abbreviation = tail.startswith(".") and len(stripped) <= _ABBREVIATION_LETTERS and stripped[:1].isupper()
        closes = any(char in tail for char in _CLOSERS) or (tail.startswith(_SENTENCE_END) and not abbreviation)
        opens = any(char in token[:lead] for char in _OPENERS)
        words.append((start, start + len(stripped), opens, closes))
    return words


def _is_name_word(text: str) -> bool:
    return bool(text) and (text[0].isupper() or text[0].isdigit())


def name_spans(text: str, max_words: int, *, skip_first: bool = False) -> list[tuple[int, int]]:
    """Character ranges [start, end) of the candidate names in ``text`` (``skip_first``: the first
    word alone is no candidate, as a question's "Who" or "Where")."""
    words = _words(text)
    spans = []
    for first, (start, end, _, _) in enumerate(words):
        if not _is_name_word(text[start:end]):
            continue
        for last in range(first, min(len(words), first + max_words)):
            begin, finish, opens, closes = words[last]
            if begin == finish or (opens and last > first):
                break
            if _is_name_word(text[begin:finish]) and not (skip_first and first == 0 and last == 0):
                spans.append((start, finish))
            if closes:
                break
    return spans
