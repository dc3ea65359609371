"""Upload files and follow ingestion jobs live (htmx polls until the job ends).

Staff only; and like everywhere else, a user only sees the jobs of collections they can read
(admins: all). Files go into a new collection (the uploader becomes its owner, and it is private)
or into one the uploader can read."""

from __future__ import annotations

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.db.models import QuerySet
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from apps.accounts.access import readable_collections
from apps.core.http import HtmxHttpRequest
from apps.ingest.models import IngestJob
from apps.ingest.selectors import jobs_readable
from apps.ingest.uploads import UploadRefused, uploads_submit


@staff_member_required
@require_http_methods(["GET", "POST"])
def jobs(request: HtmxHttpRequest) -> HttpResponse:
    """Recent jobs, and a form to upload files into a collection."""
    error = ""
    collection = settings.DEFAULT_COLLECTION
    if request.method == "POST":
        collection = request.POST.get("collection") or settings.DEFAULT_COLLECTION
        try:
            job = uploads_submit(user=request.user, collection=collection, files=request.FILES.getlist("files"))
        except UploadRefused as exc:
            error = str(exc)
        else:
            return redirect("ingest-job", job_id=job.id)
    context = {"jobs": readable_jobs(request)[:50], "error": error, "default_collection": collection}
    return render(request, "ingest/jobs.html", context, status=400 if error else 200)


def readable_jobs(request: HtmxHttpRequest) -> QuerySet[IngestJob]:
    return jobs_readable(collections=readable_collections(request.user))


@staff_member_required
def job_detail(request: HtmxHttpRequest, job_id: str) -> HttpResponse:
    job = get_object_or_404(readable_jobs(request), id=job_id)
    template = "ingest/job.html#progress" if request.htmx else "ingest/job.html"
    return render(request, template, {"job": job})
