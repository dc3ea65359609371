"""Ingestion jobs: uploads stored, queued on ``ingest``, claimed once, run, finished.

The worker claims a job with a conditional update, so a duplicate delivery does
nothing; a job whose worker died is retried up to INGEST_JOB_MAX_ATTEMPTS.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from neo4j import Driver

from apps.accounts.services import collection_ensure, collection_name_check
from apps.ingest.extraction import EntityExtractor
from apps.ingest.models import IngestJob
from apps.ingest.services import FAILED, FileOutcome, uploads_ingest


def job_create(
    *,
    collection: str,
    uploads: Sequence[tuple[str, bytes]],
    enqueue: bool = True,
    owner: AbstractBaseUser | None = None,
    public: bool | None = None,
) -> IngestJob:
    """Store the uploaded files and create a queued job; the task is sent after commit.

    The collection comes into being here when it is new (``collection_ensure``: owned by ``owner``,
    the uploading user when there is one; private unless ``public``). A bad name raises AccountsError
    before anything is stored."""
    collection = collection_name_check(collection)
    job_id = uuid.uuid4()
    folder = Path(settings.UPLOAD_DIR) / str(job_id)
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for number, (name, data) in enumerate(uploads):
        stored = folder / f"{number:05d}"
        stored.write_bytes(data)
        files.append({"name": name, "stored": str(stored)})
    with transaction.atomic():
        collection_ensure(name=collection, owner=owner, public=public)
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
    total = max(1, len(job.files))

    def files() -> Iterator[tuple[str, bytes]]:
        for item in job.files:
            yield item["name"], Path(item["stored"]).read_bytes()

    def progress(done: int) -> None:
        job_progress(job_id=job_id, stage=f"{done} of {total} files", percent=100 * done // total)

    job_progress(job_id=job_id, stage=f"0 of {total} files", percent=0)
    outcomes = uploads_ingest(
        driver=driver, uploads=files(), collection=job.collection, extractor=extractor, on_batch=progress
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
