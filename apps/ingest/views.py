"""The former staff upload pages, folded into Curation → Documents and Jobs: their addresses
redirect there, so old links and bookmarks keep working. Uploading is a POST to
``curation:document-upload`` (curators) or ``POST /api/v1/documents/`` (API keys)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET


@require_GET
def jobs(request: HttpRequest) -> HttpResponse:
    """``/ingest/``: the upload form and the jobs live under Curation → Documents."""
    return redirect("curation:documents")


@require_GET
def job_detail(request: HttpRequest, job_id: str) -> HttpResponse:
    """``/ingest/jobs/<id>/``: the job's page under Curation → Jobs (which checks access)."""
    return redirect("curation:job", job_id=job_id)
