"""Curation → Documents upload and Curation → Jobs: files into a collection through an ingestion
job, its live progress, and a retry of what failed.

Uploads and retries go through the ingest services (apps.ingest.uploads, apps.ingest.jobs), so
their documents are logged in the change log like any ingestion, with the curator as actor. A
curator sees only the jobs of collections they can read."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.access import readable_collections
from apps.accounts.roles import CURATOR, role_required
from apps.core.http import HtmxHttpRequest
from apps.curation.forms import RetryForm, errors_text
from apps.curation.views import documents_response, upload_form
from apps.ingest.jobs import RetryRefused, job_retry, kept_until, retryable_files
from apps.ingest.models import IngestJob
from apps.ingest.selectors import jobs_readable
from apps.ingest.uploads import UploadRefused, actor_of, uploads_submit

JOBS_PER_PAGE = 25


def _retryable(job: IngestJob) -> list[dict[str, object]]:
    return [{"number": n, "name": job.files[n]["name"]} for n in retryable_files(job)]


def _job(request: HttpRequest, job_id: str) -> IngestJob:
    job = jobs_readable(collections=readable_collections(request.user)).filter(id=job_id).first()
    if job is None:
        raise Http404("no such job")
    return job


@role_required(CURATOR)
@require_POST
def document_upload(request: HttpRequest) -> HttpResponse:
    """Files into a collection as a new ingestion job; its page follows the progress. A refused
    upload shows the form again with the reason (400) and stores nothing."""
    form = upload_form(request, bound=True)
    if not form.is_valid():
        return documents_response(request, form, status=400)
    try:
        job = uploads_submit(
            user=request.user,
            collection=form.cleaned_data["collection"],
            files=form.cleaned_data["files"],
            space=form.cleaned_data["new_collection_space"],
        )
    except UploadRefused as exc:
        form.add_error(None, str(exc))
        return documents_response(request, form, status=400)
    messages.success(
        request, f"Uploaded {len(job.files)} file{'s' if len(job.files) != 1 else ''} into “{job.collection}”."
    )
    return redirect("curation:job", job_id=job.id)


@role_required(CURATOR)
@require_GET
def jobs(request: HtmxHttpRequest) -> HttpResponse:
    """Ingestion jobs of the readable collections, newest first; the list refreshes itself while
    one of them runs."""
    page = Paginator(jobs_readable(collections=readable_collections(request.user)), JOBS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    listed: list[IngestJob] = list(page.object_list)
    rows = [{"job": job, "retryable": _retryable(job)} for job in listed]
    context = {
        "page": page,
        "rows": rows,
        "live": any(not job.finished for job in listed),
        "keep_days": settings.INGEST_KEEP_FAILED_DAYS,
    }
    template = "curation/jobs.html#jobs" if request.htmx else "curation/jobs.html"
    return render(request, template, context)


@role_required(CURATOR)
@require_GET
def job_detail(request: HtmxHttpRequest, job_id: str) -> HttpResponse:
    """One job's live progress (htmx polls the ``live`` partial until it ends; without JavaScript
    the page has a refresh link), its per-file outcomes and the retry of its failed files."""
    job = _job(request, str(job_id))
    context = {
        "job": job,
        "retryable": _retryable(job),
        "kept_until": kept_until(job),
        "expired": sum("expired" in item for item in job.files),
    }
    template = "curation/job.html#live" if request.htmx else "curation/job.html"
    return render(request, template, context)


@role_required(CURATOR)
@require_POST
def job_retry_view(request: HttpRequest, job_id: str) -> HttpResponse:
    """Queue a failed job's kept files again (all, or the ones chosen) as a new job."""
    job = _job(request, str(job_id))
    form = RetryForm(request.POST)
    if not form.is_valid():
        messages.error(request, errors_text(form))
        return redirect("curation:job", job_id=job.id)
    try:
        retry = job_retry(
            job_id=str(job.id), numbers=form.cleaned_data["files"], owner=None, actor=actor_of(request.user)
        )
    except RetryRefused as exc:
        messages.error(request, str(exc))
        return redirect("curation:job", job_id=job.id)
    link = reverse("curation:job", args=[retry.id])
    messages.success(
        request,
        format_html(
            'Retrying {} file{} as <a href="{}">job {}</a>; what goes in is logged in the change log.',
            len(retry.files),
            "s" if len(retry.files) != 1 else "",
            link,
            str(retry.id)[:8],
        ),
    )
    return redirect("curation:job", job_id=retry.id)
