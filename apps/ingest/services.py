"""Ingestion services: files in, knowledge graph out.

``uploads_ingest`` parses files, then hands batches of documents to
``documents_ingest``, which chunks them, extracts entities in one pass, and
writes the batch in one Neo4j transaction (all or nothing per document).
Jobs around it live in ``apps.ingest.jobs``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import neo4j.exceptions
from django.conf import settings
from django.db import transaction
from neo4j import Driver

from apps.graph.writer import document_graph_delete, documents_graph_write, documents_in_graph
from apps.ingest.chunking import chunk_text
from apps.ingest.extraction import EntityExtractor, SpacyExtractor
from apps.ingest.graph_build import DocumentGraph, Unit, add_knowledge, build_structure, document_id
from apps.ingest.media import image_store
from apps.ingest.models import Document
from apps.ingest.parsing import parse_upload
from apps.ingest.timing import StageTimer
from apps.ingest.types import IngestError, Limits, ParsedDocument

logger = logging.getLogger(__name__)

CREATED, UNCHANGED, REPLACED, FAILED = "created", "unchanged", "replaced", "failed"


@dataclass(frozen=True)
class FileOutcome:
    path: str
    status: str
    document_id: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    error_code: str | None = None
    error: str | None = None


@functools.cache
def default_extractor() -> EntityExtractor:
    """The process's entity extractor (spaCy en_core_web_sm, loaded on first use)."""
    return SpacyExtractor()


def ingest_limits() -> Limits:
    return Limits(
        max_file_bytes=settings.INGEST_MAX_FILE_BYTES,
        max_image_pixels=settings.INGEST_MAX_IMAGE_PIXELS,
        max_zip_members=settings.INGEST_MAX_ZIP_MEMBERS,
        max_zip_total_bytes=settings.INGEST_MAX_ZIP_BYTES,
        max_table_rows=settings.INGEST_MAX_TABLE_ROWS,
    )


@dataclass
class _Pending:
    """A parsed document on its way into the graph."""

    parsed: ParsedDocument
    document_id: str
    previous_id: str | None
    graph: DocumentGraph | None = None
    units: list[Unit] = field(default_factory=list)


def documents_ingest(
    *,
    driver: Driver,
    parsed: Sequence[ParsedDocument],
    collection: str,
    extractor: EntityExtractor,
    timer: StageTimer | None = None,
) -> list[FileOutcome]:
    """Put a batch of parsed documents into the graph, one outcome per document.

    Documents whose bytes are already there are ``unchanged``; a new version of
    a path ``replaces`` the old one. The batch is written in one transaction;
    if that fails, each document is retried alone, so one bad document fails
    by itself and leaves no trace.
    """
    timer = timer or StageTimer()
    outcomes: dict[int, FileOutcome] = {}
    pending = _pending(driver=driver, parsed=parsed, collection=collection, outcomes=outcomes)
    for item in pending.values():
        with timer.stage("chunk"):
            chunks = chunk_text(
                item.parsed.text,
                size=settings.INGEST_CHUNK_SIZE,
                overlap=settings.INGEST_CHUNK_OVERLAP,
                pages=item.parsed.pages,
            )
        with timer.stage("images"):
            images = [image_store(image=image, document_id=item.document_id) for image in item.parsed.images]
        item.graph, item.units = build_structure(
            parsed=item.parsed, collection=collection, chunks=chunks, images=images
        )
    with timer.stage("ner"):
        extractions = iter(extractor.extract([unit.text for item in pending.values() for unit in item.units]))
    for item in pending.values():
        assert item.graph is not None
        add_knowledge(graph=item.graph, units=item.units, extractions=[next(extractions) for _ in item.units])
    with timer.stage("graph_write"):
        written = _write_all_or_each(driver=driver, pending=list(pending.values()))
    for index, item in pending.items():
        error = written.get(item.document_id)
        if error is not None:
            outcomes[index] = FileOutcome(item.parsed.path, FAILED, error_code="graph_write_failed", error=error)
    _record(collection=collection, pending=[item for item in pending.values() if item.document_id not in written])
    for index, item in pending.items():
        if index not in outcomes and item.graph is not None:
            status = REPLACED if item.previous_id else CREATED
            outcomes[index] = FileOutcome(item.parsed.path, status, item.document_id, item.graph.counts())
    return [outcomes[index] for index in range(len(parsed))]


def _pending(
    *, driver: Driver, parsed: Sequence[ParsedDocument], collection: str, outcomes: dict[int, FileOutcome]
) -> dict[int, _Pending]:
    """The documents of the batch that need writing; fills ``outcomes`` for the rest."""
    ids = [document_id(collection=collection, sha256=doc.sha256) for doc in parsed]
    rows = Document.objects.in_bulk(ids)
    in_graph = documents_in_graph(driver=driver, document_ids=ids)
    previous = {
        doc.path: doc.id
        for doc in Document.objects.filter(collection=collection, path__in=[p.path for p in parsed]).exclude(id__in=ids)
    }
    pending: dict[int, _Pending] = {}
    seen: set[str] = set()
    for index, (doc, doc_id) in enumerate(zip(parsed, ids, strict=True)):
        if doc_id in in_graph or doc_id in seen:
            if doc_id not in rows and doc_id not in seen:
                _record(collection=collection, pending=[_Pending(doc, doc_id, None)])
            outcomes[index] = FileOutcome(doc.path, UNCHANGED, doc_id, rows[doc_id].counts if doc_id in rows else {})
            continue
        seen.add(doc_id)
        pending[index] = _Pending(doc, doc_id, previous.get(doc.path))
    return pending


def _write_all_or_each(*, driver: Driver, pending: list[_Pending]) -> dict[str, str]:
    """Write the batch in one transaction, or else each document alone; return the failures."""
    graphs = [item.graph for item in pending if item.graph is not None]
    replaces = [item.previous_id for item in pending if item.previous_id]
    if not graphs:
        return {}
    try:
        documents_graph_write(driver=driver, graphs=graphs, replaces=replaces)
        return {}
    except (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.SessionExpired):
        raise
    except neo4j.exceptions.Neo4jError as exc:
        logger.warning("a batch of %d documents was refused (%s); writing them one at a time", len(graphs), exc)
    failures: dict[str, str] = {}
    for item in pending:
        if item.graph is None:
            continue
        try:
            documents_graph_write(driver=driver, graphs=[item.graph], replaces=[p for p in [item.previous_id] if p])
        except neo4j.exceptions.Neo4jError as exc:
            failures[item.document_id] = f"the graph refused the document: {exc.message or exc}"
    return failures


def _record(*, collection: str, pending: Sequence[_Pending]) -> None:
    """The relational rows of documents now in the graph (replacing older versions)."""
    with transaction.atomic():
        Document.objects.filter(id__in=[item.previous_id for item in pending if item.previous_id]).delete()
        for item in pending:
            doc = item.parsed
            Document.objects.update_or_create(
                id=item.document_id,
                defaults={
                    "collection": collection,
                    "path": doc.path,
                    "title": doc.title[:300],
                    "mime": doc.mime,
                    "sha256": doc.sha256,
                    "size": doc.size,
                    "counts": item.graph.counts() if item.graph is not None else {},
                },
            )


def uploads_ingest(
    *,
    driver: Driver,
    uploads: Iterable[tuple[str, bytes]],
    collection: str,
    extractor: EntityExtractor,
    timer: StageTimer | None = None,
    batch_size: int | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> list[FileOutcome]:
    """Parse uploads (a zip may hold many documents) and ingest them in batches.

    Bad input becomes a ``failed`` outcome with a specific error; the other
    documents are still ingested, and nothing else in the graph is touched.
    """
    timer = timer or StageTimer()
    size = batch_size or settings.INGEST_BATCH_SIZE
    outcomes: list[FileOutcome] = []
    batch: list[ParsedDocument] = []
    files_done = 0

    def flush() -> None:
        if batch:
            outcomes.extend(
                documents_ingest(driver=driver, parsed=batch, collection=collection, extractor=extractor, timer=timer)
            )
            batch.clear()
        if on_batch is not None:
            on_batch(files_done)

    for name, data in uploads:
        try:
            with timer.stage("parse"):
                documents = parse_upload(name=name, data=data, limits=ingest_limits())
            if {doc.path for doc in documents} & {doc.path for doc in batch}:
                flush()  # a later version of a path replaces the earlier one, so write that first
            batch.extend(documents)
        except IngestError as exc:
            outcomes.append(FileOutcome(name, FAILED, error_code=exc.code, error=exc.message))
        files_done += 1
        if len(batch) >= size:
            flush()
    flush()
    return outcomes


def upload_ingest(
    *,
    driver: Driver,
    name: str,
    data: bytes,
    collection: str,
    extractor: EntityExtractor,
    timer: StageTimer | None = None,
) -> list[FileOutcome]:
    """One upload; see :func:`uploads_ingest`."""
    return uploads_ingest(
        driver=driver, uploads=[(name, data)], collection=collection, extractor=extractor, timer=timer
    )


def document_delete(*, driver: Driver, document_id: str) -> bool:
    """Delete a document and everything only it supported; return whether it existed."""
    in_graph = document_graph_delete(driver=driver, document_id=document_id)
    deleted, _ = Document.objects.filter(id=document_id).delete()
    return in_graph or deleted > 0
