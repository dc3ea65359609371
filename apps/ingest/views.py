"""Upload files and follow ingestion jobs live (htmx polls until the job ends)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from apps.core.http import HtmxHttpRequest
from apps.ingest.jobs import job_create
from apps.ingest.models import IngestJob


@staff_member_required
@require_http_methods(["GET", "POST"])
def jobs(request: HtmxHttpRequest) -> HttpResponse:
    """Recent jobs, and a form to upload files into a collection."""
    error = ""
    if request.method == "POST":
        uploads = request.FILES.getlist("files")
        collection = (request.POST.get("collection") or settings.DEFAULT_COLLECTION).strip()[:100]
        if not uploads:
            error = "Choose at least one file."
        else:
            job = job_create(collection=collection, uploads=[(f.name or "upload", f.read()) for f in uploads])
            return redirect("ingest-job", job_id=job.id)
    context = {"jobs": IngestJob.objects.all()[:50], "error": error, "default_collection": settings.DEFAULT_COLLECTION}
    return render(request, "ingest/jobs.html", context, status=400 if error else 200)


@staff_member_required
def job_detail(request: HtmxHttpRequest, job_id: str) -> HttpResponse:
    job = get_object_or_404(IngestJob, id=job_id)
    template = "ingest/job.html#progress" if request.htmx else "ingest/job.html"
    return render(request, template, {"job": job})
