"""Thin Celery tasks for ingestion; the work is in apps.ingest.services."""

from __future__ import annotations

import logging

import neo4j.exceptions
from celery import Task, shared_task
from django.db.models import F

from apps.graph.driver import get_driver
from apps.ingest.jobs import failed_uploads_expire, job_claim, job_fail, job_run
from apps.ingest.services import default_extractor

logger = logging.getLogger(__name__)

TRANSIENT = (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.SessionExpired, neo4j.exceptions.TransientError)


@shared_task(name="ingest.run_job", bind=True, max_retries=5)
def run_ingest_job(self: Task, job_id: str) -> str:  # type: ignore[type-arg]
    """Run an ingestion job; a duplicate delivery of a finished job does nothing."""
    if not job_claim(job_id=job_id):
        return "skipped"
    try:
        job = job_run(job_id=job_id, driver=get_driver(), extractor=default_extractor())
    except TRANSIENT as exc:
        if self.request.retries < (self.max_retries or 0):
            logger.warning("ingest job %s: %s; retrying", job_id, exc)
            from apps.ingest.models import IngestJob

            # A clean wait for Neo4j gives its attempt back: the attempts bound deaths of the worker, and
            # the task's own retries (about a minute in all) bound the wait.
            IngestJob.objects.filter(id=job_id).update(
                state=IngestJob.QUEUED, stage="waiting for Neo4j", attempts=F("attempts") - 1
            )
            raise self.retry(exc=exc, countdown=min(60, 2 ** (self.request.retries + 1))) from exc
        job_fail(job_id=job_id, error=f"Neo4j unavailable: {exc}")
        return "failed"
    except Exception as exc:
        logger.exception("ingest job %s crashed", job_id)
        job_fail(job_id=job_id, error=f"internal error: {type(exc).__name__}: {exc}")
        return "failed"
    return job.state


@shared_task(name="ingest.expire_failed_uploads", ignore_result=True)
def expire_failed_uploads() -> int:
    """Beat task: delete the kept files of failed uploads older than INGEST_KEEP_FAILED_DAYS."""
    return failed_uploads_expire()
