"""What the audit pages show: the filtered list of answers, and one answer's provenance record
laid out for its page (the answer cut into token spans, per token its supporting sentences with
fast and exact scores, the sources with readable graph paths, the retrieval trace).

Who sees which answer: an answer is readable when every collection it drew on — its sources'
documents and its seeds (where recorded) — is readable by the viewer (apps.accounts.access). The
list leaves the others out; their pages and exports are 404s, like answers that do not exist. The
scope an answer was asked over is shown without the collections the viewer cannot read."""

from __future__ import annotations

import datetime
import re
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Exists, OuterRef, QuerySet

from apps.accounts.access import covers
from apps.answers.expansion import question_entity_ids
from apps.answers.models import Answer
from apps.answers.paths import Names, Predicates
from apps.answers.types import STAGES
from apps.ledger.pages import answer_knowledge_log
from apps.provenance.models import AttributionRecord, ExactRun
from apps.provenance.runs import LOST, exact_run_latest, run_lost
from apps.provenance.services import provenance_record
from apps.provenance.types import EXACT, FAST

PAGE_SIZE = 50
COLOURS = 10  # source tints in audit.css: src-0 .. src-9, reused beyond ten sources
_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")
_MARKER = re.compile(r"\[(\d+)\]")


# --- the list of answers ---------------------------------------------------------


@dataclass(frozen=True)
class AnswerFilters:
    """The list page's filters; empty values filter nothing, dates are inclusive."""

    question: str = ""
    user: str = ""
    document: str = ""
    date_from: datetime.date | None = None
    date_to: datetime.date | None = None


def source_uses_document(source: dict[str, Any], term: str) -> bool:
    """Whether a source is of the document ``term`` names: its id, or a piece of its name or path."""
    document = str(source.get("document") or "")
    return term == source.get("document_id") or term.casefold() in document.casefold()


def _filtered(filters: AnswerFilters) -> QuerySet[Answer]:
    answers = Answer.objects.select_related("user").annotate(
        has_exact=Exists(AttributionRecord.objects.filter(answer=OuterRef("pk"), mode=EXACT))
    )
    if filters.question:
        answers = answers.filter(question__icontains=filters.question)
    if filters.user:
        answers = answers.filter(user__username=filters.user)
    if filters.date_from:
        answers = answers.filter(created_at__date__gte=filters.date_from)
    if filters.date_to:
        answers = answers.filter(created_at__date__lte=filters.date_to)
    # A prefilter the database can run on the stored JSON text on SQLite and PostgreSQL alike:
    # ASCII letters and digits are stored unescaped by both, so an answer that uses the document
    # contains every ASCII word of the term; the exact test runs in Python afterwards.
    for word in _ASCII_WORD.findall(filters.document):
        answers = answers.filter(sources__icontains=word)
    return answers.order_by("-created_at")


def answer_collections(sources: Iterable[Mapping[str, Any]], seeds: Iterable[Mapping[str, Any]] | None) -> set[str]:
    """The collections an answer drew on: its sources' and its seeds' (seeds recorded before
    accounts existed carry none)."""
    found = {str(source.get("collection") or "") for source in sources}
    found |= {str(seed.get("collection") or "") for seed in seeds or []}
    found.discard("")
    return found


def answer_readable(answer: Answer, readable: Collection[str] | None) -> bool:
    """Whether a viewer who can read ``readable`` (None: everything) may see ``answer``."""
    return covers(readable, answer_collections(answer.sources, answer.seeds))


def _matching(answers: QuerySet[Answer], term: str, readable: Collection[str] | None) -> list[uuid.UUID]:
    rows = answers.values_list("id", "sources", "seeds")
    return [
        pk
        for pk, sources, seeds in rows.iterator(chunk_size=200)
        if (not term or any(source_uses_document(s, term) for s in sources))
        and covers(readable, answer_collections(sources, seeds))
    ]


def answers_page(
    *, filters: AnswerFilters, page: str | int | None, readable: Collection[str] | None
) -> tuple[Page[Any], list[Answer]]:
    """One page of the answers that pass ``filters`` and that a viewer who can read ``readable``
    (None: everything) may see, newest first: the page (for its links) and its answers."""
    answers = _filtered(filters)
    if not filters.document and readable is None:
        answer_page: Page[Any] = Paginator(answers, PAGE_SIZE).get_page(page)
        return answer_page, list(answer_page.object_list)
    id_page: Page[Any] = Paginator(_matching(answers, filters.document, readable), PAGE_SIZE).get_page(page)
    return id_page, list(answers.filter(id__in=list(id_page.object_list)))


def record_for_reader(record: dict[str, Any], readable: Collection[str] | None) -> dict[str, Any]:
    """A readable answer's provenance record as a viewer sees it: the scope it was asked over
    without the collections the viewer cannot read (its sources and seeds are readable already)."""
    scope = record.get("collections")
    if readable is None or scope is None:
        return record
    return {**record, "collections": [name for name in scope if name in readable]}


# --- one answer --------------------------------------------------------------------


def _supports(fast: Sequence[dict[str, Any]], exact: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A token's supporting sentences, fast mode's first: each with its fast and its exact score."""
    merged: dict[tuple[int, int], dict[str, Any]] = {}
    for mode, supports in (("fast", fast), ("exact", exact)):
        for support in supports:
            key = (int(support["number"]), int(support["sentence"]))
            row = merged.setdefault(
                key,
                {
                    "number": key[0],
                    "sentence": key[1],
                    "start": support["start"],
                    "end": support["end"],
                    "column": support.get("column", ""),
                    "fast": None,
                    "exact": None,
                },
            )
            row[mode] = support["score"]
    return list(merged.values())


def page_tokens(fast: Sequence[dict[str, Any]], exact: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answer's tokens (fast mode's, or exact's when only it exists), with both modes' supports
    (matched on the tokens' offsets) and ``top``, the number of the source that supports it most."""
    exact_by_span = {(t["start"], t["end"]): t["sources"] for t in exact}
    tokens = []
    for index, token in enumerate(fast or exact):
        fast_supports = token["sources"] if fast else []
        supports = _supports(fast_supports, exact_by_span.get((token["start"], token["end"]), []))
        tokens.append(
            {
                "index": index,
                "text": token["text"],
                "start": token["start"],
                "end": token["end"],
                "top": supports[0]["number"] if supports else None,
                "supports": supports,
            }
        )
    return tokens


_WORD_CHAR = re.compile(r"\w")
EMPTY_NAMES: Names = {}
EMPTY_PREDICATES: Predicates = {}


def _joins(text: str, left: Mapping[str, Any], right: Mapping[str, Any]) -> bool:
    """Whether ``right`` continues the word ``left`` ends (a sub-word piece: no space between, word
    characters on both sides)."""
    end, start = int(left["end"]), int(right["start"])
    if end != start or not 0 < end < len(text):
        return False
    return bool(_WORD_CHAR.match(text[end - 1]) and _WORD_CHAR.match(text[end]))


def _merged_supports(members: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The supports of a word's pieces: per sentence the best fast and exact score of any piece, best fast
    score first (those only exact attributes after, best first); a one-piece word keeps its own order."""
    if len(members) == 1:
        return [dict(support) for support in members[0]["supports"]]
    merged: dict[tuple[int, int], dict[str, Any]] = {}
    for token in members:
        for support in token["supports"]:
            key = (int(support["number"]), int(support["sentence"]))
            row = merged.setdefault(key, {**support, "fast": None, "exact": None})
            for mode in ("fast", "exact"):
                if support.get(mode) is not None:
                    row[mode] = max(float(support[mode]), float(row[mode] if row[mode] is not None else -1e9))
    return sorted(merged.values(), key=lambda r: (r["fast"] is None, -(r["fast"] or 0.0), -(r["exact"] or 0.0)))


def page_words(tokens: Sequence[Mapping[str, Any]], text: str) -> list[dict[str, Any]]:
    """The page's tokens grouped into words (sub-word pieces joined: " Gw" + "endolyn" is one word), each
    with its pieces' supports merged; hover and colour then go by word."""
    groups: list[list[Mapping[str, Any]]] = []
    for token in tokens:
        if groups and _joins(text, groups[-1][-1], token):
            groups[-1].append(token)
        else:
            groups.append([token])
    words = []
    for index, members in enumerate(groups):
        supports = _merged_supports(members)
        start, end = int(members[0]["start"]), int(members[-1]["end"])
        words.append(
            {
                "index": index,
                "text": text[start:end] if 0 <= start < end <= len(text) else "".join(m["text"] for m in members),
                "start": start,
                "end": end,
                "top": supports[0]["number"] if supports else None,
                "supports": supports,
                "pieces": len(members),
            }
        )
    return words


def colour(number: int | None) -> str:
    return "none" if number is None else f"src-{(number - 1) % COLOURS}"


def _markers(text: str) -> list[dict[str, Any]]:
    """A citation marker's text (" [1][3]") as plain text and one link per source number."""
    segments: list[dict[str, Any]] = []
    position = 0
    for match in _MARKER.finditer(text):
        if match.start() > position:
            segments.append({"kind": "text", "text": text[position : match.start()]})
        segments.append({"kind": "cite", "text": match.group(0), "number": int(match.group(1))})
        position = match.end()
    if position < len(text):
        segments.append({"kind": "text", "text": text[position:]})
    return segments


def answer_segments(
    text: str, tokens: Sequence[dict[str, Any]], citations: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The answer text cut into plain text, token spans and citation markers, in order.

    Markers win over tokens where they overlap; a token cut by a marker becomes two spans
    with the same index."""
    owner: list[tuple[str, int] | None] = [None] * len(text)
    for token in tokens:
        for i in range(max(0, token["start"]), min(len(text), token["end"])):
            owner[i] = ("token", token["index"])
    for number, citation in enumerate(citations):
        for i in range(max(0, int(citation["marker_start"])), min(len(text), int(citation["marker_end"]))):
            owner[i] = ("marker", number)
    segments: list[dict[str, Any]] = []
    start = 0
    for end in range(1, len(text) + 1):
        if end < len(text) and owner[end] == owner[start]:
            continue
        piece, who = text[start:end], owner[start]
        if who is None:
            segments.append({"kind": "text", "text": piece})
        elif who[0] == "marker":
            segments.extend(_markers(piece))
        else:
            token = tokens[who[1]]
            segments.append({"kind": "token", "text": piece, "index": who[1], "colour": colour(token["top"])})
        start = end
    return segments


def _node_labels(record: dict[str, Any]) -> dict[str, str]:
    """Readable names of the graph nodes an answer's paths go through, where the record knows them."""
    labels: dict[str, str] = {}
    analysis = record["retrieval"]["analysis"]
    for name in analysis.get("entities") or []:
        for node in question_entity_ids([name]):
            labels[node] = f"{name} (from the question)"
    for linked in analysis.get("linked") or []:
        labels[linked["id"]] = f"{linked['name']} (named in the question)"
    for seed in record["retrieval"]["seeds"] or []:
        labels[seed["id"]] = f"{seed.get('label', 'node')} {seed['id'][:8]} (seed)"
    for source in record["sources"]:
        labels[source["id"]] = f"[{source['number']}] {source.get('document', '')}"
    return labels


def _path_steps(
    path: dict[str, Any], labels: Mapping[str, str], names: Names, predicates: Predicates
) -> list[dict[str, str]]:
    """A path as alternating node and relationship steps: start node, relationship, node, ... Nodes are
    named by the record (question entities, seeds, sources), else by the graph (``names``: entities by
    name, units by their text), else by a short id; a RELATED step by its predicate where known."""
    nodes, relationships = path.get("nodes") or [], path.get("relationships") or []
    steps: list[dict[str, str]] = []
    for position, node in enumerate(nodes):
        if position:
            relationship = relationships[position - 1] if position - 1 < len(relationships) else "?"
            pair = (nodes[position - 1], node)
            predicate = (
                predicates.get(pair) or predicates.get((pair[1], pair[0])) if relationship == "RELATED" else None
            )
            steps.append({"kind": "rel", "label": predicate or relationship})
        inner = 0 < position < len(nodes) - 1
        known = names.get(node)
        if node in labels:
            label = labels[node]
        elif known is not None and known.name:
            label = known.name if known.label == "Entity" else f"{known.label.lower()}: {known.name}"
        else:
            label = f"{'entity' if inner else 'node'} {node[:8]}"
        steps.append({"kind": "node", "label": label})
    return steps


def _source_view(
    source: dict[str, Any],
    labels: dict[str, str],
    names: Names = EMPTY_NAMES,
    predicates: Predicates = EMPTY_PREDICATES,
) -> dict[str, Any]:
    number = int(source["number"])
    return {
        "number": number,
        "colour": colour(number),
        "id": source.get("id", ""),
        "kind": source.get("kind", ""),
        "document": source.get("document", ""),
        "document_id": source.get("document_id", ""),
        "collection": source.get("collection", ""),
        "image_path": source.get("path", ""),
        "text": source.get("text") or "",
        "sha256": source.get("sha256", ""),
        "score": source.get("score"),
        "scores": source.get("scores") or {},
        "paths": [
            {"score": path.get("score"), "steps": _path_steps(path, labels, names, predicates)}
            for path in source.get("path_details") or []
        ],
    }


def _timings(timings: dict[str, Any]) -> list[tuple[str, Any]]:
    order = [*STAGES, "queue"]
    known = [(stage, timings[stage]) for stage in order if stage in timings]
    return known + sorted((key, value) for key, value in timings.items() if key not in order)


def answer_page_context(
    answer: Answer,
    *,
    readable: Collection[str] | None,
    names: Names = EMPTY_NAMES,
    predicates: Predicates = EMPTY_PREDICATES,
) -> dict[str, Any]:
    """The template context of an answer's audit page, built from its provenance record as a viewer
    who can read ``readable`` sees it (the caller checked ``answer_readable``); ``names`` and
    ``predicates`` (``apps.answers.paths.path_names``) name the paths' nodes and RELATED steps."""
    record = record_for_reader(provenance_record(answer), readable)
    fast, exact = record["attribution"].get(FAST), record["attribution"].get(EXACT)
    tokens = page_words(page_tokens(fast["tokens"] if fast else [], exact["tokens"] if exact else []), record["answer"])
    labels = _node_labels(record)
    sources = [_source_view(source, labels, names, predicates) for source in record["sources"]]
    seed_sources = {source["id"]: source["number"] for source in sources}
    return {
        "answer": answer,
        "record": record,
        "fast": fast,
        "exact": exact,
        "agreement": (exact or {}).get("summary", {}).get("agreement"),
        "engine": (record.get("generation") or {}).get("engine"),
        "segments": answer_segments(record["answer"], tokens, record["citations"]),
        "tokens": tokens,
        "sources": sources,
        "seeds": [{**seed, "source": seed_sources.get(seed["id"])} for seed in record["retrieval"]["seeds"] or []],
        "timings": _timings(record["retrieval"]["timings_ms"] or {}),
        "knowledge_log": answer_knowledge_log(ledger=answer.ledger, sources=record["sources"]),
        "audit_data": {"tokens": tokens, "sources": sources, "exact": exact is not None},
        "exact_run": exact_run_view(answer),
    }


def exact_run_view(answer: Answer) -> dict[str, Any] | None:
    """The answer's latest exact attribution run as its page shows it (``active``: the page polls it)."""
    run = exact_run_latest(answer)
    if run is None:
        return None
    lost = run_lost(run)
    return {
        "state": "lost" if lost else run.state,
        "active": run.active and not lost,
        "done": run.done,
        "total": run.total,
        "cancel_requested": run.cancel_requested,
        "error": LOST if lost else run.error,
        "cancelled": run.state == ExactRun.CANCELLED,
    }
