"""Identity in the graph: content-hash ids, entity keys and the name normalisation behind them.

The same parts always give the same id (``content_id``), so a re-ingest of the same bytes writes the
same nodes and provenance cites a stable hash; the same entity named in different documents gets one
key (``entity_key``) and so one node (``entity_id``). Ingest builds ids with these, answering links a
question's names to entities with them, curation mints the ids of entities it creates. Standard
library only.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

TITLE_LABEL = "TITLE"  # the entity a document's title names: what its passages are about

# Coarse type groups for entity keys; labels are matched upper-cased, so an LLM extractor's
# "Person" or "Organization" lands in the same group as spaCy's PERSON or ORG.
_TYPE_GROUPS: dict[str, str] = {
    **dict.fromkeys(("PERSON", "PER", "PEOPLE"), "person"),
    **dict.fromkeys(("GPE", "LOC", "FAC", "LOCATION", "PLACE", "CITY", "COUNTRY", "FACILITY"), "place"),
    **dict.fromkeys(("ORG", "ORGANIZATION", "ORGANISATION", "COMPANY", "INSTITUTION"), "org"),
    **dict.fromkeys(("NORP", "GROUP", "NATIONALITY", "RELIGION"), "group"),
    **dict.fromkeys(("WORK_OF_ART", "PRODUCT", "WORK", "BOOK", "FILM", "SONG"), "work"),
    **dict.fromkeys(("EVENT",), "event"),
    **dict.fromkeys(("LAW",), "law"),
    **dict.fromkeys(("LANGUAGE",), "language"),
    **dict.fromkeys(("DATE", "TIME"), "time"),
    **dict.fromkeys(("MONEY", "PERCENT", "QUANTITY", "CARDINAL", "ORDINAL"), "number"),
}

_APOSTROPHES = str.maketrans(dict.fromkeys("\u2019\u2018\u02bc`\u00b4", "'"))
_POSSESSIVE = re.compile(r"'s$")


def content_id(*parts: str) -> str:
    """A stable 32-hex-digit id from its parts."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return digest[:32]


def entity_id(key: str) -> str:
    """The id of the entity node whose key (``entity_key``) this is."""
    return content_id("entity", key)


def normalise_entity_name(name: str) -> str:
    """The name part of an entity key.

    NFKC, casefolded, whitespace collapsed, surrounding punctuation, a possessive "'s" and a
    leading "the " removed: "The  United States" and "the united states's" -> "united states".
    Empty when the name has nothing but punctuation and whitespace.
    """
    text = " ".join(unicodedata.normalize("NFKC", name).translate(_APOSTROPHES).casefold().split())
    text = _POSSESSIVE.sub("", _strip_punctuation(text))
    text = _strip_punctuation(text)
    if text.startswith("the "):
        text = _strip_punctuation(text[4:])
    return text


def _strip_punctuation(text: str) -> str:
    start, end = 0, len(text)
    while start < end and _is_trimmable(text[start]):
        start += 1
    while end > start and _is_trimmable(text[end - 1]):
        end -= 1
    return text[start:end]


def _is_trimmable(char: str) -> bool:
    return char.isspace() or unicodedata.category(char).startswith("P")


def entity_key(name: str, label: str) -> str:
    """Identity key ``"<group>:<normalised name>"``; equal keys mean the same entity.

    Groups (labels upper-cased; spaCy's, plus common LLM spellings):
    ``person`` PERSON; ``place`` GPE, LOC, FAC (spaCy mixes these up for the same place);
    ``org`` ORG; ``group`` NORP (nationalities, religious and political groups);
    ``work`` WORK_OF_ART, PRODUCT (created things, often confused); ``event`` EVENT;
    ``law`` LAW; ``language`` LANGUAGE; ``time`` DATE, TIME; ``number`` MONEY, PERCENT,
    QUANTITY, CARDINAL, ORDINAL. Any other label is its own group (lowercased). So "Paris"
    (GPE) and "Paris" (LOC) share ``place:paris``, while "Paris" (PERSON) is ``person:paris``.
    """
    normalised = normalise_entity_name(name) or " ".join(name.casefold().split())
    return f"{entity_group(label)}:{normalised}"


def entity_group(label: str) -> str:
    """The identity group of a type label (``entity_key``): ``GPE`` and ``LOC`` are both ``place``."""
    return _TYPE_GROUPS.get(label.strip().upper(), label.strip().casefold() or "entity")
