"""Ingestion jobs: uploads stored, queued on ``ingest``, claimed once, run, finished.

The worker claims a job with a conditional update, so a duplicate delivery does
nothing; a job whose worker died is retried up to INGEST_JOB_MAX_ATTEMPTS.

Retention: a finished job deletes the stored uploads of the files that went in and keeps those of
the files that failed (all of them when the job crashed), so ``job_retry`` can queue them again as
a new job, which takes them over. Kept files not retried within ``INGEST_KEEP_FAILED_DAYS`` of the
job's end are deleted by ``failed_uploads_expire`` (the beat runs it hourly).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.files import File
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from neo4j import Driver

from apps.accounts.services import collection_ensure, collection_name_check
from apps.core.dependencies import REDIS, DependencyUnavailable, fix_for
from apps.ingest.extraction import EntityExtractor
from apps.ingest.models import IngestJob
from apps.ingest.services import FAILED, FileOutcome, uploads_ingest

logger = logging.getLogger(__name__)


class RetryRefused(ValueError):
    """A retry that cannot be made (the job did not fail, or keeps no file to retry)."""


def _store(path: Path, data: bytes | File[bytes]) -> None:
    if isinstance(data, bytes):
        path.write_bytes(data)
        return
    with path.open("wb") as out:
        for chunk in data.chunks():
            out.write(chunk)


def job_create(
    *,
    collection: str,
    uploads: Sequence[tuple[str, bytes | File[bytes]]],
    enqueue: bool = True,
    owner: AbstractBaseUser | None = None,
    public: bool | None = None,
    actor: str = "system:ingest",
    retry_of: IngestJob | None = None,
) -> IngestJob:
    """Store the uploaded files and create a queued job; the task is sent after commit.

    The collection comes into being here when it is new (``collection_ensure``: owned by ``owner``,
    the uploading user when there is one; private unless ``public``). A bad name raises AccountsError
    before anything is stored. The job's documents are logged with ``actor``."""
    collection = collection_name_check(collection)
    job_id = uuid.uuid4()
    folder = Path(settings.UPLOAD_DIR) / str(job_id)
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for number, (name, data) in enumerate(uploads):
        stored = folder / f"{number:05d}"
        _store(stored, data)
        files.append({"name": name, "stored": str(stored)})
    with transaction.atomic():
        collection_ensure(name=collection, owner=owner, public=public)
        job = IngestJob.objects.create(id=job_id, collection=collection, files=files, actor=actor, retry_of=retry_of)
        if enqueue:
            transaction.on_commit(lambda: job_enqueue(job_id=str(job_id)))
    return job


QUEUE_DOWN = "The task queue (Redis) was not reachable, so the job was never queued; retry it once Redis is back."


def job_enqueue(*, job_id: str) -> None:
    """Send the job's task; when the broker is down the job fails at once with QUEUE_DOWN (rather than
    staying queued with no task behind it) and DependencyUnavailable (Redis) is raised."""
    from apps.ingest.tasks import run_ingest_job

    try:
        run_ingest_job.apply_async(args=(job_id,), queue="ingest")
    except Exception as exc:  # kombu's OperationalError, the result backend's RuntimeError and friends
        job_fail(job_id=job_id, error=QUEUE_DOWN)
        # the view answers 503 naming Redis (apps.core.middleware)
        raise DependencyUnavailable(
            REDIS, f"cannot reach Redis at {settings.CELERY_BROKER_URL}", fix_for(REDIS)
        ) from exc


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
        driver=driver,
        uploads=files(),
        collection=job.collection,
        extractor=extractor,
        on_batch=progress,
        actor=job.actor,
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
    kept = failed_uploads(files=job.files, failed_paths={outcome.path for outcome in failed})
    if not kept:
        shutil.rmtree(Path(settings.UPLOAD_DIR) / str(job_id), ignore_errors=True)
    for number, item in enumerate(job.files):
        if number not in kept:
            Path(item["stored"]).unlink(missing_ok=True)
    return job


def failed_uploads(*, files: Sequence[dict[str, str]], failed_paths: set[str]) -> set[int]:
    """The positions of the uploaded files that a job's failed outcomes came from.

    A file that failed as a whole is named by its outcome. A document inside a zip is named by its
    path in the archive: when a failed outcome names no uploaded file, every zip of the job is kept
    (retrying a zip leaves its members that went in unchanged: the same bytes are a no-op)."""
    names = {item["name"] for item in files}
    kept = {number for number, item in enumerate(files) if item["name"] in failed_paths}
    if failed_paths - names:
        kept |= {number for number, item in enumerate(files) if item["name"].lower().endswith(".zip")}
    return kept


def retryable_files(job: IngestJob) -> list[int]:
    """The positions of a failed job's files that are kept and not retried yet."""
    if job.state != IngestJob.FAILED:
        return []
    return [
        number
        for number, item in enumerate(job.files)
        if "retried_as" not in item and "expired" not in item and Path(item["stored"]).is_file()
    ]


def job_retry(
    *, job_id: str, numbers: Sequence[int] | None = None, owner: AbstractBaseUser | None = None, actor: str
) -> IngestJob:
    """Queue a failed job's kept files (all, or those at ``numbers``) again, as a new job.

    The new job takes the files over: the old job's copies are deleted and each is marked with the
    new job's id, so a file is retried once. The new job is ingested through the same services as
    any upload, so what goes in is logged with ``actor``."""
    with transaction.atomic():
        job = IngestJob.objects.select_for_update().get(id=job_id)
        available = retryable_files(job)
        chosen = available if not numbers else [n for n in numbers if n in available]
        if not chosen:
            raise RetryRefused("This job has no failed files left to retry.")
        uploads = [(job.files[n]["name"], Path(job.files[n]["stored"]).read_bytes()) for n in chosen]
        retry = job_create(collection=job.collection, uploads=uploads, owner=owner, actor=actor, retry_of=job)
        _files_release(job, chosen, mark={"retried_as": str(retry.id)})
    return retry


def _files_release(job: IngestJob, numbers: Sequence[int], *, mark: dict[str, str]) -> None:
    """Inside the caller's transaction: mark the job's kept files at ``numbers`` (no longer its to retry)
    and delete them once the transaction commits."""
    files = [dict(item) for item in job.files]
    for n in numbers:
        files[n].update(mark)
    IngestJob.objects.filter(id=job.id).update(files=files)
    transaction.on_commit(functools.partial(_unlink, [job.files[n]["stored"] for n in numbers]))


def kept_until(job: IngestJob) -> datetime | None:
    """When a failed job's kept files are deleted if not retried (None: kept until retried)."""
    if job.finished_at is None or not settings.INGEST_KEEP_FAILED_DAYS:
        return None
    return job.finished_at + timedelta(days=settings.INGEST_KEEP_FAILED_DAYS)


def failed_uploads_expire() -> int:
    """Delete the kept files of failed jobs that ended more than ``INGEST_KEEP_FAILED_DAYS`` ago and were
    not retried; each is marked ``expired`` (the date) in its job. Returns how many files were deleted."""
    if not settings.INGEST_KEEP_FAILED_DAYS:
        return 0
    now = timezone.now()
    cutoff = now - timedelta(days=settings.INGEST_KEEP_FAILED_DAYS)
    deleted = 0
    for job_id in IngestJob.objects.filter(state=IngestJob.FAILED, finished_at__lt=cutoff).values_list("id", flat=True):
        with transaction.atomic():
            job = IngestJob.objects.select_for_update().get(id=job_id)
            numbers = retryable_files(job)
            if not numbers:
                continue
            _files_release(job, numbers, mark={"expired": now.date().isoformat()})
        deleted += len(numbers)
        logger.info("job %s: %d kept file(s) of a failed upload expired, deleted", job_id, len(numbers))
    return deleted


def _unlink(paths: Sequence[str]) -> None:
    """Delete retried files, and their job's folder once it is empty."""
    for path in paths:
        Path(path).unlink(missing_ok=True)
    for folder in {Path(path).parent for path in paths}:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty


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
