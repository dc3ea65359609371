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

from apps.accounts.access import can_read, readable_collections
from apps.accounts.models import Collection
from apps.accounts.services import AccountsError, collection_name_check
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
        try:
            collection = upload_collection(request, request.POST.get("collection") or settings.DEFAULT_COLLECTION)
        except AccountsError as exc:
            error = str(exc)
        else:
            if not uploads:
                error = "Choose at least one file."
            else:
                job = job_create(
                    collection=collection,
                    uploads=[(f.name or "upload", f.read()) for f in uploads],
                    owner=request.user if request.user.is_authenticated else None,
                )
                return redirect("ingest-job", job_id=job.id)
    context = {"jobs": readable_jobs(request)[:50], "error": error, "default_collection": settings.DEFAULT_COLLECTION}
    return render(request, "ingest/jobs.html", context, status=400 if error else 200)


def upload_collection(request: HtmxHttpRequest, name: str) -> str:
    """The collection an upload may go into: a new one, or one the uploader can read."""
    collection = collection_name_check(name)
    if Collection.objects.filter(name=collection).exists() and not can_read(request.user, collection):
        raise AccountsError(f"You cannot add files to the collection “{collection}”; choose another name.")
    return collection


def readable_jobs(request: HtmxHttpRequest) -> QuerySet[IngestJob]:
    allowed = readable_collections(request.user)
    jobs = IngestJob.objects.all()
    return jobs if allowed is None else jobs.filter(collection__in=allowed)


@staff_member_required
def job_detail(request: HtmxHttpRequest, job_id: str) -> HttpResponse:
    job = get_object_or_404(readable_jobs(request), id=job_id)
    template = "ingest/job.html#progress" if request.htmx else "ingest/job.html"
    return render(request, template, {"job": job})
