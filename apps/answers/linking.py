"""Entity linking: the graph entities a question names, found by exact and alias match of its spans.

Two sources of names: spaCy's entities in the question (``analysis.question_entities``) and every
span of up to ``max_words`` words that starts and ends with a capitalised word or a number
(``apps.ingest.names.name_spans``: a film title spaCy does not tag, a surname alone). Each name
is normalised as entity keys are (``extraction.normalise_entity_name``: "The Beatles'" ->
"beatles") and looked up under each entity group, the ``title`` group included (a document's
title names an entity its passages are about, ``graph_build.title_name``), so a name tagged
PERSON in the question still finds the ORG of the same name. Where one matched span lies inside
a longer matched one ("Russian" inside "Polish-Russian War"), only the longer one links. An
entity's link score is its specificity (``1 / log2(1 + mentions)``, as in the expansion)
relative to the best linked one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from neo4j import Driver

from apps.answers.expansion import NAME_GROUPS, specificity
from apps.graph import cypher
from apps.graph.driver import graph_read
from apps.ingest.extraction import entity_key, normalise_entity_name
from apps.ingest.graph_build import TITLE_LABEL, entity_id
from apps.ingest.names import name_spans

# The entity groups a question's name is looked up in: the expansion's name groups and titles.
LINK_LABELS = (*NAME_GROUPS, TITLE_LABEL)


@dataclass(frozen=True)
class LinkParams:
    spans: bool = True  # link the question's capitalised spans too, not only spaCy's names
    max_words: int = 6
    max_degree: int = 500  # an entity more units mention than this links to nothing
    labels: tuple[str, ...] = LINK_LABELS  # the entity groups names are looked up in


@dataclass(frozen=True)
class LinkedEntity:
    entity_id: str
    name: str
    span: str
    degree: int
    score: float


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


def entities_link(*, driver: Driver, question: str, names: Sequence[str], params: LinkParams) -> list[LinkedEntity]:
    """The graph entities the question names, best linked first."""
    spans = _candidates(question, names, params)
    candidates = [{"id": entity_id(entity_key(norm, label)), "span": norm} for norm in spans for label in params.labels]
    if not candidates:
        return []
    rows = graph_read(driver, cypher.ANSWER_ENTITY_LINK, candidates=candidates)
    rows = [row for row in rows if row["degree"] <= params.max_degree]
    matched = {row["span"] for row in rows}
    kept = [row for row in rows if not _inside_another(row["span"], spans, matched)]
    best = max((specificity(row["degree"]) for row in kept), default=1.0)
    linked = {
        row["id"]: LinkedEntity(
            row["id"], row["name"], spans[row["span"]][2], row["degree"], specificity(row["degree"]) / best
        )
        for row in kept
    }
    return sorted(linked.values(), key=lambda entity: (-entity.score, entity.entity_id))
