"""Entity linking: the graph entities a question names, by exact match of its names, else by embedding.

Two sources of names: spaCy's entities in the question (``analysis.question_entities``) and every
span of up to ``max_words`` words that starts and ends with a capitalised word or a number
(``apps.ingest.names.name_spans``: a film title spaCy does not tag, a surname alone). Each name
is normalised as entity keys are (``apps.graph.identity.normalise_entity_name``: "The Beatles'" ->
"beatles") and looked up under each entity group, the ``title`` group included (a document's
title names an entity its passages are about, ``graph_build.title_name``), so a name tagged
PERSON in the question still finds the ORG of the same name. Where one matched span lies inside
a longer matched one ("Russian" inside "Polish-Russian War"), only the longer one links. A name
that matched nothing exactly (overlapping no matched one, and inside no longer such name) is embedded and linked to the
entities whose names' embeddings are nearest (``entity_name_vectors``; cosine at least
``embedding_min_score``; with ``embedding`` on): "D.P. Varma" finds "D. P. Varma", which no exact key holds.
An entity's link score is its specificity (``1 / log2(1 + mentions)``, as in the expansion)
relative to the best linked one, times the cosine for an embedding match.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from neo4j import Driver

from apps.answers.expansion import NAME_GROUPS, specificity
from apps.graph import cypher
from apps.graph.db import graph_read_timed
from apps.graph.identity import TITLE_LABEL, entity_id, entity_key, normalise_entity_name
from apps.ingest.names import name_spans
from apps.models.interfaces import Vectors

Embed = Callable[[Sequence[str]], Vectors]

# Lower-case words a name may hold ("Lord of the Rings"), and the words a question opens with that
# are capitalised only for that: a span holding other lower-case words, or opening with one of
# these, is a phrase ("What happened in Oslo"), not a name to embed.
_CONNECTORS = frozenset({"of", "the", "and", "de", "du", "des", "la", "le", "van", "von", "der", "del", "da", "y"})
_OPENING_WORDS = frozenset(
    {
        "what",
        "who",
        "whom",
        "whose",
        "which",
        "where",
        "when",
        "why",
        "how",
        "is",
        "was",
        "are",
        "were",
        "did",
        "does",
        "do",
        "in",
        "on",
        "at",
        "the",
        "a",
        "an",
        "name",
        "from",
        "for",
        "of",
    }
)

# The entity groups a question's name is looked up in: the expansion's name groups and titles.
LINK_LABELS = (*NAME_GROUPS, TITLE_LABEL)


@dataclass(frozen=True)
class LinkParams:
    spans: bool = True  # link the question's capitalised spans too, not only spaCy's names
    max_words: int = 6
    max_degree: int = 500  # an entity more units mention than this links to nothing
    labels: tuple[str, ...] = LINK_LABELS  # the entity groups names are looked up in
    embedding: bool = False  # link the names that match nothing to the entity names embedding close
    embedding_min_score: float = 0.9  # how close (cosine)
    embedding_k: int = 2  # nearest entity names asked for per unmatched name


@dataclass(frozen=True)
class LinkedEntity:
    entity_id: str
    name: str
    span: str
    degree: int
    score: float
    match: str = "exact"  # or "embedding"


def _candidates(question: str, names: Sequence[str], params: LinkParams) -> dict[str, tuple[int, int, str]]:
    """Normalised name -> (character range in the question, surface text); a spaCy name not found
    verbatim gets a range past the end (it lies inside no other and holds none)."""
    found: dict[str, tuple[int, int, str]] = {}
    for name in names:
        start = question.find(name)
        where = (start, start + len(name)) if start >= 0 else (len(question) + 1, len(question) + 1)
        found.setdefault(normalise_entity_name(name), (*where, name))
    if params.spans:
        for start, end in name_spans(question, params.max_words, skip_first=True):
            found.setdefault(normalise_entity_name(question[start:end]), (start, end, question[start:end]))
    found.pop("", None)
    return found


def _inside_another(norm: str, spans: dict[str, tuple[int, int, str]], matched: set[str]) -> bool:
    start, end, _ = spans[norm]
    return any(
        spans[other][0] <= start and end <= spans[other][1] and spans[other][:2] != (start, end) for other in matched
    )


def _name_like(text: str) -> bool:
    """Whether a span reads as one name: a letter in it, no lower-case word but connectors, and no
    question word first."""
    words = text.split()
    return (
        any(char.isalpha() for char in text)
        and words[0].casefold() not in _OPENING_WORDS
        and all(word[0].isupper() or word[0].isdigit() or word in _CONNECTORS for word in words)
    )


def _overlaps(norm: str, spans: dict[str, tuple[int, int, str]], matched: set[str]) -> bool:
    start, end, _ = spans[norm]
    return any(spans[other][0] < end and start < spans[other][1] for other in matched)


def _nearest(
    driver: Driver, spans: dict[str, tuple[int, int, str]], unmatched: list[str], embed: Embed, params: LinkParams
) -> list[dict[str, Any]]:
    vectors = embed([spans[norm][2] for norm in unmatched])
    rows = [
        {"span": norm, "vector": [float(x) for x in vector]} for norm, vector in zip(unmatched, vectors, strict=True)
    ]
    found = graph_read_timed(
        driver, cypher.ANSWER_ENTITY_NEAREST, rows=rows, k=params.embedding_k, min_score=params.embedding_min_score
    )
    return [row for row in found if row["degree"] <= params.max_degree]


def entities_link(
    *, driver: Driver, question: str, names: Sequence[str], params: LinkParams, embed: Embed | None = None
) -> list[LinkedEntity]:
    """The graph entities the question names, best linked first (``embed``: the text encoder's
    document embedding, for the names no entity matches exactly; None: exact matches only)."""
    spans = _candidates(question, names, params)
    candidates = [{"id": entity_id(entity_key(norm, label)), "span": norm} for norm in spans for label in params.labels]
    if not candidates:
        return []
    rows = graph_read_timed(driver, cypher.ANSWER_ENTITY_LINK, candidates=candidates)
    rows = [row for row in rows if row["degree"] <= params.max_degree]
    matched = {row["span"] for row in rows}
    kept = [{**row, "score": 1.0, "match": "exact"} for row in rows if not _inside_another(row["span"], spans, matched)]
    # The longest name-like spans that overlap no match: "Polish Russian War", not also "Polish"
    # and "War"; never a bare year or a phrase.
    free = {
        norm
        for norm in spans
        if norm not in matched and not _overlaps(norm, spans, matched) and _name_like(spans[norm][2])
    }
    unmatched = [norm for norm in spans if norm in free and not _inside_another(norm, spans, free)]
    if embed is not None and unmatched and params.embedding:
        kept += [{**row, "match": "embedding"} for row in _nearest(driver, spans, unmatched, embed, params)]
    best = max((specificity(row["degree"]) for row in kept), default=1.0)
    linked: dict[str, LinkedEntity] = {}
    for row in kept:
        score = specificity(row["degree"]) / best * float(row["score"])
        if row["id"] not in linked or score > linked[row["id"]].score:
            linked[row["id"]] = LinkedEntity(
                row["id"], row["name"], spans[row["span"]][2], row["degree"], score, row["match"]
            )
    return sorted(linked.values(), key=lambda entity: (-entity.score, entity.entity_id))
