"""Read-only views of ingestion state."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django.db.models import QuerySet

from apps.ingest.models import IngestJob


def job_summary(*, job: IngestJob) -> dict[str, Any]:
    """The job as the JSON that `manage.py ingest --json` prints."""
    return {
        "id": str(job.id),
        "collection": job.collection,
        "state": job.state,
        "stage": job.stage,
        "percent": job.percent,
        "counts": job.counts,
        "results": job.results,
        "error": job.error,
        "attempts": job.attempts,
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }


def jobs_readable(*, collections: Collection[str] | None) -> QuerySet[IngestJob]:
    """The jobs of the given collections (None: every job), newest first."""
    jobs = IngestJob.objects.all()
    return jobs if collections is None else jobs.filter(collection__in=collections)
