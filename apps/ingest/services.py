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
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import neo4j.exceptions
from django.conf import settings
from django.db import transaction
from neo4j import Driver

from apps.accounts.services import collection_ensure
from apps.core.language import main_language, written_in_cjk
from apps.graph.writer import document_graph_delete, documents_graph_write, documents_in_graph
from apps.ingest.chunking import chunk_text
from apps.ingest.enrich import (
    ModelSet,
    UnitVectors,
    default_models,
    images_describe,
    unit_vectors_store,
    units_embed,
    vector_spaces,
)
from apps.ingest.extraction import EntityExtractor, SpacyExtractor
from apps.ingest.extraction_pool import ExtractionFailed, ExtractorPool, PendingExtraction, extraction_submit
from apps.ingest.graph_build import DocumentGraph, Unit, add_knowledge, build_structure, document_id
from apps.ingest.media import image_store, page_store
from apps.ingest.models import Document
from apps.ingest.parsing import parse_upload
from apps.ingest.synonyms import SynonymParams, entity_names_embed, synonyms_link
from apps.ingest.timing import StageTimer
from apps.ingest.types import IngestError, Limits, ParsedDocument
from apps.ledger.content import Content, document_content, document_subject, text_digest
from apps.ledger.graph import document_contents
from apps.ledger.services import Change, entries_append, subjects_latest
from apps.vectors.config import spaces_in_use
from apps.vectors.spaces import collection_space_settle

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


CJK_CHUNK_SHARE = 1 / 3  # the share of INGEST_CHUNK_SIZE (and _OVERLAP) a text in CJK characters gets
CJK_SAMPLE_CHARS = 20_000  # enough of a text to tell its script
MIN_CHUNK_CHARS = 100


@functools.cache
def default_extractor() -> EntityExtractor:
    """The process's entity extractor: spaCy en_core_web_sm, in INGEST_NER_PROCESSES helper
    processes (or in this process when that is 0), loaded on first use."""
    if settings.INGEST_NER_PROCESSES > 0:
        return ExtractorPool(processes=settings.INGEST_NER_PROCESSES)
    return SpacyExtractor()


def extraction_helpers_stop() -> None:
    """Stop the default extractor's helper processes, if it has started any."""
    if default_extractor.cache_info().currsize:
        extractor = default_extractor()
        if isinstance(extractor, ExtractorPool):
            extractor.close()


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
    images: list[dict[str, Any]] = field(default_factory=list)  # image rows, described
    page_images: list[dict[str, Any]] = field(default_factory=list)  # a PDF's rendered pages: path, width, height
    vectors: UnitVectors | None = None


@dataclass
class _Batch:
    """Documents between parsing and their graph write; extraction may still be running."""

    parsed: Sequence[ParsedDocument]
    collection: str
    pending: dict[int, _Pending]
    outcomes: dict[int, FileOutcome]
    extraction: PendingExtraction | None = None
    name_vectors: list[dict[str, Any]] = field(default_factory=list)  # entities' names to store, embedded
    space: str = "text"  # the collection's text space (apps/vectors/spaces.py), settled when embedded

    def conflicts_with(self, parsed: Sequence[ParsedDocument]) -> bool:
        """Whether ``parsed`` repeats a path or the content of a document of this batch."""
        paths = {item.parsed.path for item in self.pending.values()}
        ids = {item.document_id for item in self.pending.values()}
        return any(
            doc.path in paths or document_id(collection=self.collection, sha256=doc.sha256) in ids for doc in parsed
        )


@dataclass(frozen=True)
class _Tools:
    driver: Driver
    extractor: EntityExtractor
    models: ModelSet
    timer: StageTimer
    actor: str = "system:ingest"


def _batch_start(*, tools: _Tools, parsed: Sequence[ParsedDocument], collection: str) -> _Batch:
    """Sort out unchanged documents, chunk the rest, describe their images, start entity extraction."""
    timer = tools.timer
    batch = _Batch(parsed=parsed, collection=collection, pending={}, outcomes={})
    batch.pending = _pending(
        driver=tools.driver, parsed=parsed, collection=collection, outcomes=batch.outcomes, actor=tools.actor
    )
    with timer.stage("images"):
        for item in batch.pending.values():
            item.images = [image_store(image=image, document_id=item.document_id) for image in item.parsed.images]
            item.page_images = [page_store(render) for render in item.parsed.page_renders]
        images_describe(
            tagger=tools.models.tagger,
            rows=[row for item in batch.pending.values() for row in item.images],
            images=[image for item in batch.pending.values() for image in item.parsed.images],
        )
    for item in batch.pending.values():
        with timer.stage("chunk"):
            # Chinese (and Japanese, Korean) carries about one token per character, English one per
            # four or five: such text is cut into chunks of a third of the characters, so that a chunk
            # holds about as many tokens (the encoders read 512 at most).
            share = CJK_CHUNK_SHARE if written_in_cjk(item.parsed.text[:CJK_SAMPLE_CHARS]) else 1
            chunks = chunk_text(
                item.parsed.text,
                size=max(MIN_CHUNK_CHARS, round(settings.INGEST_CHUNK_SIZE * share)),
                overlap=round(settings.INGEST_CHUNK_OVERLAP * share),
                pages=item.parsed.pages,
            )
        item.graph, item.units = build_structure(
            parsed=item.parsed, collection=collection, chunks=chunks, images=item.images, page_images=item.page_images
        )
    extractor = tools.extractor
    with timer.stage("ner"):
        texts = [unit.text for item in batch.pending.values() for unit in item.units]
        batch.extraction = extraction_submit(extractor, texts)
    return batch


def _batch_analyse(*, batch: _Batch, timer: StageTimer) -> None:
    """Wait for the batch's extraction and turn it into entities, mentions and relations."""
    if batch.extraction is None:
        return
    with timer.stage("ner"):
        extractions = iter(batch.extraction.result())
    batch.extraction = None
    for item in batch.pending.values():
        assert item.graph is not None
        add_knowledge(graph=item.graph, units=item.units, extractions=[next(extractions) for _ in item.units])


def _batch_embed(*, tools: _Tools, batch: _Batch) -> None:
    """Embed an analysed batch's units (this thread: the encoder)."""
    items = list(batch.pending.values())
    sizes = ((str(item.graph.document.get("language", "und")), item.parsed.size) for item in items if item.graph)
    batch.space = collection_space_settle(batch.collection, main_language(sizes))
    with tools.timer.stage("embed"):
        embedded = units_embed(
            models=tools.models,
            collection=batch.collection,
            documents=[(item.units, item.parsed.images, item.images) for item in items],
            space=batch.space,
        )
    for item, vectors in zip(items, embedded, strict=True):
        item.vectors = vectors
    if settings.GRAPH_SYNONYM_K > 0:
        with tools.timer.stage("embed_names"):
            batch.name_vectors = entity_names_embed(
                driver=tools.driver,
                embed=tools.models.text.embed_documents,
                entities=[row for item in items if item.graph is not None for row in item.graph.entities],
            )


_Written = tuple[dict[str, str], list[str]]  # failures (document id -> reason), unit ids of replaced versions


def _batch_graph_write(*, tools: _Tools, batch: _Batch) -> _Written:
    """Write an embedded batch to Neo4j (one transaction, else document by document); Neo4j only,
    so it may run in the writer thread while the next batch embeds. Then the synonym edges of its
    entities with newly embedded names (``synonyms.synonyms_link``)."""
    with tools.timer.stage("graph_write"):
        written = _write_all_or_each(driver=tools.driver, pending=list(batch.pending.values()))
    with tools.timer.stage("synonyms"):
        params = SynonymParams(k=settings.GRAPH_SYNONYM_K, min_score=settings.GRAPH_SYNONYM_MIN_SCORE)
        synonyms_link(driver=tools.driver, rows=batch.name_vectors, params=params)
    return written


def _batch_finish(*, tools: _Tools, batch: _Batch, written: _Written) -> list[FileOutcome]:
    """Record a written batch and store its vectors; its outcomes, one per parsed document."""
    outcomes, timer = batch.outcomes, tools.timer
    failed, removed_units = written
    for index, item in batch.pending.items():
        error = failed.get(item.document_id)
        if error is not None:
            outcomes[index] = FileOutcome(item.parsed.path, FAILED, error_code="graph_write_failed", error=error)
    done = [item for item in batch.pending.values() if item.document_id not in failed]
    with timer.stage("record"):
        _record(driver=tools.driver, collection=batch.collection, pending=done, actor=tools.actor)
    with timer.stage("index_write"):
        unit_vectors_store(
            spaces=vector_spaces(tools.models, batch.space),
            added=[item.vectors for item in done if item.vectors is not None],
            removed_units=removed_units,
        )
    for index, item in batch.pending.items():
        if index not in outcomes and item.graph is not None:
            status = REPLACED if item.previous_id else CREATED
            outcomes[index] = FileOutcome(item.parsed.path, status, item.document_id, item.graph.counts())
    return [outcomes[index] for index in range(len(batch.parsed))]


def _batch_write(*, tools: _Tools, batch: _Batch) -> list[FileOutcome]:
    """Embed an analysed batch, write it, record it, and store its vectors."""
    _batch_embed(tools=tools, batch=batch)
    return _batch_finish(tools=tools, batch=batch, written=_batch_graph_write(tools=tools, batch=batch))


class _Pipeline:
    """Batches in flight: one extracting entities (the helper processes), one being embedded (this
    thread) and one being written to Neo4j (the writer thread), so the encoder does not wait for
    the graph. Outcomes come out in batch order; a batch is recorded and its vectors stored here,
    after its graph write."""

    def __init__(self, tools: _Tools, outcomes: list[FileOutcome]) -> None:
        self._tools = tools
        self._outcomes = outcomes
        self._writer: ThreadPoolExecutor | None = None
        self.extracting: _Batch | None = None
        self._writing: tuple[_Batch, Future[_Written]] | None = None

    def conflicts_with(self, parsed: Sequence[ParsedDocument]) -> bool:
        return any(batch.conflicts_with(parsed) for batch in self._in_flight())

    def _in_flight(self) -> list[_Batch]:
        return [batch for batch in (self.extracting, self._writing[0] if self._writing else None) if batch]

    def _finish_writing(self) -> None:
        if self._writing is not None:
            batch, future = self._writing
            self._writing = None
            self._outcomes.extend(_batch_finish(tools=self._tools, batch=batch, written=future.result()))

    def advance(self) -> None:
        """Embed the extracted batch (while the one before is written), then start its graph write."""
        batch, self.extracting = self.extracting, None
        if batch is None:
            return
        _batch_analyse(batch=batch, timer=self._tools.timer)
        _batch_embed(tools=self._tools, batch=batch)
        self._finish_writing()
        if not settings.INGEST_OVERLAP_GRAPH_WRITES:
            written = _batch_graph_write(tools=self._tools, batch=batch)
            self._outcomes.extend(_batch_finish(tools=self._tools, batch=batch, written=written))
            return
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-graph-write")
        self._writing = (batch, self._writer.submit(_batch_graph_write, tools=self._tools, batch=batch))

    def drain(self) -> None:
        self.advance()
        self._finish_writing()

    def close(self) -> None:
        """Collect what is still running (after a failure): a graph write in flight is finished and
        recorded, a running extraction collected so the extractor is free again."""
        try:
            if self._writing is not None:
                try:
                    self._finish_writing()
                except Exception:
                    logger.exception("the batch being written when ingestion stopped failed too")
        finally:
            if self._writer is not None:
                self._writer.shutdown(wait=True)
            if self.extracting is not None:
                _batch_abandon(self.extracting)
                self.extracting = None


def documents_ingest(
    *,
    driver: Driver,
    parsed: Sequence[ParsedDocument],
    collection: str,
    extractor: EntityExtractor,
    models: ModelSet | None = None,
    timer: StageTimer | None = None,
    actor: str = "system:ingest",
) -> list[FileOutcome]:
    """Put a batch of parsed documents into the graph and the vector indexes, one outcome per document.

    Documents whose bytes are already there are ``unchanged``; a new version of
    a path ``replaces`` the old one. The batch is written in one transaction;
    if that fails, each document is retried alone, so one bad document fails
    by itself and leaves no trace. The collection gets its ``Collection`` row (private) if it has none.
    """
    collection = collection_ensure(name=collection).name
    tools = _Tools(driver, extractor, models or default_models(), timer or StageTimer(), actor)
    batch = _batch_start(tools=tools, parsed=parsed, collection=collection)
    _batch_analyse(batch=batch, timer=tools.timer)
    return _batch_write(tools=tools, batch=batch)


def _pending(
    *, driver: Driver, parsed: Sequence[ParsedDocument], collection: str, outcomes: dict[int, FileOutcome], actor: str
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
                _record(driver=driver, collection=collection, pending=[_Pending(doc, doc_id, None)], actor=actor)
            outcomes[index] = FileOutcome(doc.path, UNCHANGED, doc_id, rows[doc_id].counts if doc_id in rows else {})
            continue
        seen.add(doc_id)
        pending[index] = _Pending(doc, doc_id, previous.get(doc.path))
    return pending


def _write_all_or_each(*, driver: Driver, pending: list[_Pending]) -> tuple[dict[str, str], list[str]]:
    """Write the batch in one transaction, or else each document alone.

    Returns the failures (document id -> reason) and the unit ids of the replaced versions.
    """
    graphs = [item.graph for item in pending if item.graph is not None]
    replaces = [item.previous_id for item in pending if item.previous_id]
    if not graphs:
        return {}, []
    try:
        return {}, documents_graph_write(driver=driver, graphs=graphs, replaces=replaces)
    except (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.SessionExpired):
        raise
    except neo4j.exceptions.Neo4jError as exc:
        logger.warning("a batch of %d documents was refused (%s); writing them one at a time", len(graphs), exc)
    failures: dict[str, str] = {}
    removed: list[str] = []
    for item in pending:
        if item.graph is None:
            continue
        try:
            removed += documents_graph_write(
                driver=driver, graphs=[item.graph], replaces=[p for p in [item.previous_id] if p]
            )
        except neo4j.exceptions.Neo4jError as exc:
            failures[item.document_id] = f"the graph refused the document: {exc.message or exc}"
    return failures, removed


def _graph_content(graph: DocumentGraph) -> Content:
    """A written document version as the change log hashes it (apps.ledger.content)."""
    units = [
        *((str(row["id"]), text_digest(str(row["text"]))) for row in [*graph.chunks, *graph.rows]),
        *((str(row["id"]), str(row["sha256"])) for row in graph.images),
    ]
    return document_content(document=graph.document, units=units)


def _changes(*, driver: Driver, collection: str, pending: Sequence[_Pending]) -> list[Change]:
    """One change-log entry per document version now in the graph: ingested, or updated when it
    replaces an earlier version of its path."""
    from_graph = document_contents(
        driver=driver, document_ids=[item.document_id for item in pending if item.graph is None]
    )
    subjects = [document_subject(collection=collection, path=item.parsed.path) for item in pending]
    latest = subjects_latest(kind="Document", subject_ids=subjects)
    changes = []
    for item, subject in zip(pending, subjects, strict=True):
        after = _graph_content(item.graph) if item.graph is not None else from_graph.get(item.document_id)
        if after is None:
            continue  # no longer in the graph: nothing to record
        before = latest.get(subject)
        action = "document.updated" if before is not None else "document.ingested"
        changes.append(Change(action, "Document", subject, before, after, ref=item.document_id))
    return changes


def _record(*, driver: Driver, collection: str, pending: Sequence[_Pending], actor: str) -> None:
    """The relational rows of documents now in the graph (replacing older versions), with their
    change-log entries, in one transaction."""
    changes = _changes(driver=driver, collection=collection, pending=pending)
    rows = [
        Document(
            id=item.document_id,
            collection=collection,
            path=item.parsed.path,
            title=item.parsed.title[:300],
            mime=item.parsed.mime,
            sha256=item.parsed.sha256,
            size=item.parsed.size,
            counts=item.graph.counts() if item.graph is not None else {},
            language=str(item.graph.document.get("language", "")) if item.graph is not None else "",
        )
        for item in pending
    ]
    with transaction.atomic():
        Document.objects.filter(id__in=[item.previous_id for item in pending if item.previous_id]).delete()
        Document.objects.bulk_create(
            rows,
            batch_size=500,
            update_conflicts=True,
            unique_fields=["id"],
            update_fields=["collection", "path", "title", "mime", "sha256", "size", "counts", "language", "updated_at"],
        )
        entries_append(actor=actor, changes=changes)


def uploads_ingest(
    *,
    driver: Driver,
    uploads: Iterable[tuple[str, bytes]],
    collection: str,
    extractor: EntityExtractor,
    models: ModelSet | None = None,
    timer: StageTimer | None = None,
    batch_size: int | None = None,
    on_batch: Callable[[int], None] | None = None,
    actor: str = "system:ingest",
) -> list[FileOutcome]:
    """Parse uploads (a zip may hold many documents) and ingest them in batches.

    Bad input becomes a ``failed`` outcome with a specific error; the other
    documents are still ingested, and nothing else in the graph is touched. The collection gets
    its ``Collection`` row (private) if it has none.
    """
    collection = collection_ensure(name=collection).name
    tools = _Tools(driver, extractor, models or default_models(), timer or StageTimer(), actor)
    size = batch_size or settings.INGEST_BATCH_SIZE
    outcomes: list[FileOutcome] = []
    batch: list[ParsedDocument] = []
    pipeline = _Pipeline(tools, outcomes)
    files_done = 0

    def flush() -> None:
        # Batch k+1 extracts entities while batch k embeds and batch k-1 is written; a batch that
        # repeats a path or the content of a batch in flight waits for those to be written, so
        # "replaced" and "unchanged" see them.
        if batch:
            if pipeline.conflicts_with(batch):
                pipeline.drain()
            if pipeline.extracting is not None:
                _batch_analyse(batch=pipeline.extracting, timer=tools.timer)
            started = _batch_start(tools=tools, parsed=list(batch), collection=collection)
            batch.clear()
            try:
                pipeline.advance()
            except BaseException:
                _batch_abandon(started)  # its extraction runs; collect it, or the extractor stays taken
                raise
            pipeline.extracting = started
        if on_batch is not None:
            on_batch(files_done)

    try:
        for name, data in uploads:
            try:
                with tools.timer.stage("parse"):
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
        pipeline.drain()
    finally:
        pipeline.close()
    return outcomes


def _batch_abandon(batch: _Batch) -> None:
    """Collect a running extraction nobody will use, so the extractor is free again."""
    if batch.extraction is not None:
        try:
            batch.extraction.result()
        except ExtractionFailed:
            logger.warning("entity extraction of an abandoned batch failed too")
        batch.extraction = None


def upload_ingest(
    *,
    driver: Driver,
    name: str,
    data: bytes,
    collection: str,
    extractor: EntityExtractor,
    models: ModelSet | None = None,
    timer: StageTimer | None = None,
    actor: str = "system:ingest",
) -> list[FileOutcome]:
    """One upload; see :func:`uploads_ingest`."""
    return uploads_ingest(
        driver=driver,
        uploads=[(name, data)],
        collection=collection,
        extractor=extractor,
        models=models,
        timer=timer,
        actor=actor,
    )


def document_delete(*, driver: Driver, document_id: str, actor: str = "system") -> bool:
    """Delete a document, everything only it supported and its vectors; return whether it existed.

    The row goes with its change-log entry in one transaction; the graph follows (deleting an
    absent document changes nothing, so a failed graph delete is finished by calling this again).
    """
    with transaction.atomic():
        row = Document.objects.filter(id=document_id).first()
        deleted = 0
        if row is not None:
            subject = document_subject(collection=row.collection, path=row.path)
            before = subjects_latest(kind="Document", subject_ids=[subject]).get(subject)
            deleted, _ = Document.objects.filter(id=document_id).delete()
            change = Change("document.deleted", "Document", subject, before, None, ref=document_id)
            entries_append(actor=actor, changes=[change])
    units = document_graph_delete(driver=driver, document_id=document_id)
    if units:
        unit_vectors_store(spaces=spaces_in_use(), added=[], removed_units=units)
    return units is not None or deleted > 0
