"""What the curation pages show: entities, one entity with its mentions and relations, what a
deletion or split takes, relations and documents, each limited to the collections the curator
can read (``collections``: None means every collection; it goes into every query)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Q, QuerySet
from neo4j import Driver

from apps.accounts.access import covers
from apps.answers.models import Feedback
from apps.documents.links import viewer_url
from apps.graph import cypher
from apps.graph.db import graph_read
from apps.graph.evidence import relation_evidence, snippet
from apps.ingest.models import Document
from apps.ingest.selectors import readable_documents
from apps.ledger.models import ChangeEntry
from apps.provenance.pages import answer_collections

PAGE_SIZE = 50
SNIPPETS = 8
RELATIONS = 100
RELEASED_SHOWN = 100
STATUSES = ("proposed", "approved", "rejected")

Collections = Sequence[str] | None


def _readable(collections: Collections) -> list[str] | None:
    return None if collections is None else list(collections)


MAX_PAGE = 1_000_000  # keeps SKIP within Neo4j's 64-bit integers whatever ?page= says


def page_number(value: str | int | None) -> int:
    try:
        return min(MAX_PAGE, max(1, int(value or 1)))
    except (TypeError, ValueError):
        return 1


@dataclass(frozen=True)
class Listing:
    """One page of graph rows, with what its page links need."""

    rows: list[dict[str, Any]]
    total: int
    number: int
    size: int = PAGE_SIZE

    @property
    def num_pages(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.num_pages

    @property
    def has_other_pages(self) -> bool:
        return self.has_previous or self.has_next

    @property
    def previous_page_number(self) -> int:
        return self.number - 1

    @property
    def next_page_number(self) -> int:
        return self.number + 1


def _listing(driver: Driver, statement: str, *, page: int, size: int = PAGE_SIZE, **params: Any) -> Listing:
    [record] = graph_read(driver, statement, skip=(page - 1) * size, limit=size, **params)
    return Listing(rows=[dict(row) for row in record["rows"]], total=int(record["total"]), number=page, size=size)


# --- entities --------------------------------------------------------------------------------


def entities_page(
    *, driver: Driver, query: str, type_: str, collections: Collections, page: int, size: int = PAGE_SIZE
) -> Listing:
    """Entities whose name or an alias contains ``query`` (any case), most mentioned first, each
    with its mentions and documents in the readable collections."""
    params = {"query": query.strip().lower(), "type": type_, "collections": _readable(collections)}
    listing = _listing(driver, cypher.CURATION_ENTITIES_PAGE, page=page, size=size, **params)
    if listing.rows:
        ids = [row["id"] for row in listing.rows]
        records = graph_read(
            driver, cypher.CURATION_ENTITY_DOCUMENT_COUNTS, ids=ids, collections=_readable(collections)
        )
        documents = {r["id"]: int(r["documents"]) for r in records}
        for row in listing.rows:
            row["documents"] = documents.get(row["id"], 0)
    return listing


def entity_types(*, driver: Driver) -> list[str]:
    return [str(r["type"]) for r in graph_read(driver, cypher.CURATION_ENTITY_TYPES) if r["type"]]


def relation_row(row: Any) -> dict[str, Any]:
    """A relation row with its evidence sentence (``evidence``) and the viewer's address of it
    (``evidence_url``, opened at the sentence; empty when no readable sentence holds both ends)."""
    found = dict(row)
    found["evidence"] = relation_evidence(found)
    start, end = found.get("evidence_start"), found.get("evidence_end")
    span = (start, end) if isinstance(start, int) and isinstance(end, int) else None
    document_id = str(found.get("evidence_document_id") or "")
    unit = str(found.get("evidence_unit") or "")
    found["evidence_url"] = viewer_url(document_id, unit, span) if document_id and found["evidence"] else ""
    return found


def entity_page(*, driver: Driver, entity_id: str, collections: Collections) -> dict[str, Any] | None:
    """An entity with its readable mentions (a few snippets), documents and relations; None when
    it does not exist, or no unit the reader can read mentions it."""
    readable = _readable(collections)
    found = graph_read(driver, cypher.CURATION_ENTITY, id=entity_id, collections=readable)
    if not found or (readable is not None and not found[0]["mentions"]):
        return None
    record = found[0]
    snippets = [
        {**dict(r), **snippet(str(r["text"]), r["start"], r["end"])}
        for r in graph_read(driver, cypher.CURATION_ENTITY_SNIPPETS, id=entity_id, collections=readable, limit=SNIPPETS)
    ]
    relations = [
        relation_row(r)
        for r in graph_read(
            driver, cypher.CURATION_ENTITY_RELATIONS, id=entity_id, collections=readable, limit=RELATIONS
        )
    ]
    return {
        "entity": dict(record["entity"]),
        "mentions": int(record["mentions"]),
        "documents": int(record["documents"]),
        "all_mentions": int(record["all_mentions"]),
        "all_relations": int(record["all_relations"]),
        "all_documents": int(record["all_documents"]),
        "snippets": snippets,
        "relations": [r for r in relations if not r.get("co_occurrence")],
        "co_occurrences": [r for r in relations if r.get("co_occurrence")],
    }


def entity_names(*, driver: Driver, entity_ids: Sequence[str]) -> dict[str, str]:
    """The names of these entities, by id (the missing ones left out)."""
    return {str(r["id"]): str(r["name"]) for r in graph_read(driver, cypher.CURATION_NAMES_OF, ids=list(entity_ids))}


def merge_preview(*, driver: Driver, keep: str, drop: str, collections: Collections) -> dict[str, Any] | None:
    """What merging ``drop`` into ``keep`` gives, as the curator can see it: both entities' pages and the
    result's name, type, aliases, readable mentions and relations; None when either is not readable."""
    kept = entity_page(driver=driver, entity_id=keep, collections=collections)
    dropped = entity_page(driver=driver, entity_id=drop, collections=collections)
    if kept is None or dropped is None:
        return None
    name = str(kept["entity"]["name"])
    names = [*(kept["entity"].get("aliases") or []), str(dropped["entity"]["name"])]
    names += list(dropped["entity"].get("aliases") or [])
    aliases = [a for a in dict.fromkeys(str(n) for n in names) if a and a != name]
    return {
        "keep": kept,
        "drop": dropped,
        "result": {
            "name": name,
            "type": kept["entity"]["type"],
            "aliases": aliases,
            "mentions": kept["mentions"] + dropped["mentions"],
            "relations": kept["all_relations"] + dropped["all_relations"],
        },
    }


def split_preview(*, driver: Driver, entity_id: str, documents: Sequence[str]) -> dict[str, int]:
    """How many of the entity's mentions a split by ``documents`` moves, how many stay, of how many."""
    rows = graph_read(driver, cypher.CURATION_SPLIT_COUNTS, id=entity_id, documents=list(documents))
    moving, total = (int(rows[0]["moving"]), int(rows[0]["total"])) if rows else (0, 0)
    return {"moving": moving, "staying": total - moving, "total": total}


def entity_hidden(*, driver: Driver, entity_id: str, collections: Collections) -> bool:
    """Whether the entity exists but no unit the reader can read mentions it."""
    if collections is None:
        return False
    found = graph_read(driver, cypher.CURATION_ENTITY, id=entity_id, collections=list(collections))
    return bool(found) and not found[0]["mentions"]


def entity_documents(*, driver: Driver, entity_id: str, collections: Collections) -> list[dict[str, Any]]:
    """The readable documents that mention the entity, with their mention counts."""
    records = graph_read(driver, cypher.CURATION_ENTITY_DOCUMENTS, id=entity_id, collections=_readable(collections))
    return [dict(r) for r in records]


# --- relations -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RelationFilters:
    """The relations list's filters; empty values filter nothing."""

    status: str = ""
    predicate: str = ""
    entity: str = ""  # an entity id, or a piece of an entity's name


def relations_page(
    *, driver: Driver, filters: RelationFilters, collections: Collections, page: int, size: int = PAGE_SIZE
) -> Listing:
    listing = _listing(
        driver,
        cypher.CURATION_RELATIONS_PAGE,
        page=page,
        size=size,
        status=filters.status,
        predicate=filters.predicate,
        entity=filters.entity,
        collections=_readable(collections),
    )
    listing.rows[:] = [relation_row(row) for row in listing.rows]
    return listing


def predicates(*, driver: Driver) -> list[str]:
    return [str(r["predicate"]) for r in graph_read(driver, cypher.CURATION_PREDICATES) if r["predicate"]]


def relation_hidden(*, driver: Driver, source: str, predicate: str, target: str, collections: Collections) -> bool:
    """Whether the relation exists but no document the reader can read supports it."""
    params = {"source": source, "predicate": predicate, "target": target, "collections": _readable(collections)}
    found = graph_read(driver, cypher.CURATION_RELATION_READABLE, **params)
    return bool(found) and not found[0]["readable"]


# --- documents -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DocumentFilters:
    collection: str = ""
    text: str = ""  # a piece of the title or path


def documents_filtered(*, filters: DocumentFilters, collections: Collections) -> QuerySet[Document]:
    """The readable documents that match ``filters``, by collection and path."""
    documents = readable_documents(collections)
    if filters.collection:
        documents = documents.filter(collection=filters.collection)
    if filters.text:
        documents = documents.filter(Q(title__icontains=filters.text) | Q(path__icontains=filters.text))
    return documents.order_by("collection", "path")


def documents_page(*, filters: DocumentFilters, collections: Collections, page: str | int | None) -> Page[Document]:
    return Paginator(documents_filtered(filters=filters, collections=collections), PAGE_SIZE).get_page(page)


def document_delete_preview(*, driver: Driver, document_id: str) -> dict[str, Any]:
    """What deleting the document removes from the graph: its units, and the entities and
    relations only it supports (read as ``document_delete`` writes it)."""
    parts = graph_read(driver, cypher.CURATION_DOCUMENT_PARTS, document_id=document_id)
    entities = graph_read(
        driver, cypher.CURATION_DOCUMENT_ENTITIES_RELEASED, document_id=document_id, limit=RELEASED_SHOWN
    )
    relations = graph_read(driver, cypher.CURATION_DOCUMENT_RELATIONS_RELEASED, document_id=document_id)
    counts = {key: int(value) for key, value in dict(parts[0]).items()} if parts else {}
    entity_row: dict[str, Any] = dict(entities[0]) if entities else {"mentioned": 0, "released": 0, "entities": []}
    relation_row: dict[str, Any] = dict(relations[0]) if relations else {"supported": 0, "released": 0}
    return {
        "in_graph": bool(parts),
        **{part: counts.get(part, 0) for part in ("chunks", "images", "tables", "rows")},
        "entities_mentioned": int(entity_row["mentioned"]),
        "entities_released": int(entity_row["released"]),
        "released_entities": [dict(e) for e in entity_row["entities"]],
        "relations_supported": int(relation_row["supported"]),
        "relations_released": int(relation_row["released"]),
    }


def document_deletion_entry(document_id: str) -> int | None:
    """The change-log entry that recorded the document's deletion, if any."""
    entries = ChangeEntry.objects.filter(action="document.deleted", ref=document_id).order_by("-seq")
    return entries.values_list("seq", flat=True).first()


FEEDBACK_LISTED = 500  # the newest feedback the curators' list looks through


def feedback_listing(*, readable: Collections, vote: str | None = None) -> list[Feedback]:
    """The newest feedback (of the last ``FEEDBACK_LISTED``) on answers whose sources all come from
    ``readable`` collections (None: every collection), as on the audit pages; optionally one vote only."""
    rows = Feedback.objects.select_related("answer", "user").order_by("-updated_at")
    if vote in (Feedback.UP, Feedback.DOWN):
        rows = rows.filter(vote=vote)
    allowed = _readable(readable)
    return [f for f in rows[:FEEDBACK_LISTED] if covers(allowed, answer_collections(f.answer.sources, f.answer.seeds))]
