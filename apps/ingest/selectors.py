"""Read-only views of ingestion state."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from django.db.models import QuerySet

from apps.ingest.models import Document, IngestJob

Collections = Sequence[str] | None


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


def readable_documents(collections: Collections) -> QuerySet[Document]:
    """The documents of the given collections (None: every document)."""
    documents = Document.objects.all()
    return documents if collections is None else documents.filter(collection__in=list(collections))


def document_collections(collections: Collections) -> list[str]:
    """The readable collections that hold documents."""
    names = readable_documents(collections).values_list("collection", flat=True).distinct()
    return sorted(set(names))
