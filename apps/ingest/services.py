"""Ingestion services: files in, knowledge graph out.

``job_create`` stores uploads and enqueues a job; ``job_run`` (on the
``ingest`` queue) claims it, parses each file, and writes each document's
subgraph in one Neo4j transaction (all or nothing per document).
"""

from __future__ import annotations

import functools
import logging
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from neo4j import Driver

from apps.graph.writer import document_graph_delete, document_graph_exists, document_graph_write
from apps.ingest.chunking import chunk_text
from apps.ingest.extraction import EntityExtractor, SpacyExtractor
from apps.ingest.graph_build import add_knowledge, build_structure, document_id
from apps.ingest.media import image_store
from apps.ingest.models import Document, IngestJob
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


def document_ingest(
    *,
    driver: Driver,
    parsed: ParsedDocument,
    collection: str,
    extractor: EntityExtractor,
    timer: StageTimer | None = None,
) -> FileOutcome:
    """Put one parsed document into the graph; a no-op when its bytes are already there."""
    doc_id = document_id(collection=collection, sha256=parsed.sha256)
    existing = Document.objects.filter(id=doc_id).first()
    if existing is not None and document_graph_exists(driver=driver, document_id=doc_id):
        return FileOutcome(parsed.path, UNCHANGED, doc_id, existing.counts)
    previous = Document.objects.filter(collection=collection, path=parsed.path).exclude(id=doc_id).first()

    timer = timer or StageTimer()
    with timer.stage("chunk"):
        chunks = chunk_text(
            parsed.text, size=settings.INGEST_CHUNK_SIZE, overlap=settings.INGEST_CHUNK_OVERLAP, pages=parsed.pages
        )
    with timer.stage("images"):
        images = [image_store(image=image, document_id=doc_id) for image in parsed.images]
    graph, units = build_structure(parsed=parsed, collection=collection, chunks=chunks, images=images)
    with timer.stage("ner"):
        extractions = extractor.extract([unit.text for unit in units])
    add_knowledge(graph=graph, units=units, extractions=extractions)
    replaces = [previous.id] if previous is not None else []
    with timer.stage("graph_write"):
        document_graph_write(driver=driver, graph=graph, replaces=replaces)

    counts = graph.counts()
    with transaction.atomic():
        if previous is not None:
            previous.delete()
        Document.objects.update_or_create(
            id=doc_id,
            defaults={
                "collection": collection,
                "path": parsed.path,
                "title": parsed.title[:300],
                "mime": parsed.mime,
                "sha256": parsed.sha256,
                "size": parsed.size,
                "counts": counts,
            },
        )
    return FileOutcome(parsed.path, REPLACED if previous is not None else CREATED, doc_id, counts)


def upload_ingest(
    *,
    driver: Driver,
    name: str,
    data: bytes,
    collection: str,
    extractor: EntityExtractor,
    timer: StageTimer | None = None,
) -> list[FileOutcome]:
    """Parse one upload (a zip may hold many documents) and ingest each document.

    Bad input becomes a ``failed`` outcome with a specific error; documents
    already written stay, and nothing else in the graph is touched.
    """
    timer = timer or StageTimer()
    try:
        with timer.stage("parse"):
            parsed_documents = parse_upload(name=name, data=data, limits=ingest_limits())
    except IngestError as exc:
        return [FileOutcome(name, FAILED, error_code=exc.code, error=exc.message)]
    outcomes = []
    for parsed in parsed_documents:
        try:
            outcomes.append(
                document_ingest(driver=driver, parsed=parsed, collection=collection, extractor=extractor, timer=timer)
            )
        except IngestError as exc:
            outcomes.append(FileOutcome(parsed.path, FAILED, error_code=exc.code, error=exc.message))
    return outcomes


def document_delete(*, driver: Driver, document_id: str) -> bool:
    """Delete a document and everything only it supported; return whether it existed."""
    in_graph = document_graph_delete(driver=driver, document_id=document_id)
    deleted, _ = Document.objects.filter(id=document_id).delete()
    return in_graph or deleted > 0


# --- jobs ---------------------------------------------------------------------------------


def job_create(*, collection: str, uploads: Sequence[tuple[str, bytes]], enqueue: bool = True) -> IngestJob:
    """Store the uploaded files and create a queued job; the task is sent after commit."""
    job_id = uuid.uuid4()
    folder = Path(settings.UPLOAD_DIR) / str(job_id)
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for number, (name, data) in enumerate(uploads):
        stored = folder / f"{number:05d}"
        stored.write_bytes(data)
        files.append({"name": name, "stored": str(stored)})
    with transaction.atomic():
        job = IngestJob.objects.create(id=job_id, collection=collection, files=files)
        if enqueue:
            from apps.ingest.tasks import run_ingest_job

            transaction.on_commit(lambda: run_ingest_job.apply_async(args=(str(job_id),), queue="ingest"))
    return job


def job_claim(*, job_id: str) -> bool:
    """Move a queued job (or one whose worker died) to running; False if it is not ours to run."""
    claimable = Q(state=IngestJob.QUEUED) | Q(state=IngestJob.RUNNING)
    updated = IngestJob.objects.filter(claimable, id=job_id, attempts__lt=settings.INGEST_JOB_MAX_ATTEMPTS).update(
        state=IngestJob.RUNNING, stage="starting", attempts=F("attempts") + 1, started_at=timezone.now()
    )
    if updated:
        return True
    IngestJob.objects.filter(
        id=job_id, state__in=[IngestJob.QUEUED, IngestJob.RUNNING], attempts__gte=settings.INGEST_JOB_MAX_ATTEMPTS
    ).update(
        state=IngestJob.FAILED,
        stage="failed",
        error=f"gave up after {settings.INGEST_JOB_MAX_ATTEMPTS} attempts (the worker stopped or Neo4j was down)",
        finished_at=timezone.now(),
    )
    return False


def job_progress(*, job_id: str, stage: str, percent: int) -> None:
    IngestJob.objects.filter(id=job_id).update(stage=stage, percent=max(0, min(100, percent)))


def job_run(*, job_id: str, driver: Driver, extractor: EntityExtractor) -> IngestJob:
    """Run a claimed job to its end: every file ingested or failed with its reason."""
    job = IngestJob.objects.get(id=job_id)
    outcomes: list[FileOutcome] = []
    total = max(1, len(job.files))
    for number, item in enumerate(job.files):
        job_progress(job_id=job_id, stage=f"file {number + 1}/{total}: {item['name']}", percent=100 * number // total)
        data = Path(item["stored"]).read_bytes()
        outcomes.extend(
            upload_ingest(driver=driver, name=item["name"], data=data, collection=job.collection, extractor=extractor)
        )
    return job_finish(job_id=job_id, outcomes=outcomes)


def job_finish(*, job_id: str, outcomes: Sequence[FileOutcome]) -> IngestJob:
    failed = [outcome for outcome in outcomes if outcome.status == FAILED]
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
        for key, value in outcome.counts.items():
            counts[key] = counts.get(key, 0) + value
    error = "; ".join(f"{outcome.path}: {outcome.error}" for outcome in failed)
    IngestJob.objects.filter(id=job_id).update(
        state=IngestJob.FAILED if failed else IngestJob.DONE,
        stage="failed" if failed else "done",
        percent=100,
        results=[asdict(outcome) for outcome in outcomes],
        counts=counts,
        error=error,
        finished_at=timezone.now(),
    )
    job = IngestJob.objects.get(id=job_id)
    if not failed:  # a failed job keeps its files so it can be retried
        shutil.rmtree(Path(settings.UPLOAD_DIR) / str(job_id), ignore_errors=True)
    return job


def job_fail(*, job_id: str, error: str) -> None:
    """Record a job's final failure (a crash, not bad input)."""
    IngestJob.objects.filter(id=job_id).exclude(state=IngestJob.DONE).update(
        state=IngestJob.FAILED, stage="failed", error=error[:2000], finished_at=timezone.now()
    )


def job_wait(*, job_id: str, timeout: float, on_progress: Callable[[IngestJob], None] | None = None) -> IngestJob:
    """Poll the job until it ends; raise TimeoutError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    job = IngestJob.objects.get(id=job_id)
    while not job.finished:
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} still {job.state} after {timeout:.0f}s")
        if on_progress is not None:
            on_progress(job)
        time.sleep(0.5)
        job.refresh_from_db()
    return job
