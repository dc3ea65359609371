"""REST: collections and their grants, documents, ingestion jobs (thin: the services do the work)."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db.models import Count
from django.http import HttpRequest
from ninja import Form, Query, Router, Schema, Status
from ninja.files import UploadedFile
from ninja.params import FileEx, FormEx
from pydantic import Field

from apps.accounts import services as accounts
from apps.accounts.access import readable_collections
from apps.accounts.models import Collection, CollectionGrant
from apps.accounts.roles import ADMIN, CURATOR, has_role
from apps.api.errors import ApiError, forbidden, not_found
from apps.api.parsing import FORM
from apps.api.schemas import (
    COLLECTION_NAME,
    PLAIN_TEXT,
    CollectionIn,
    CollectionOut,
    DeletionOut,
    DeletionPreview,
    DocumentDetail,
    DocumentOut,
    DocumentPage,
    ErrorOut,
    GrantChangeOut,
    GrantIn,
    GrantOut,
    JobOut,
    RetryIn,
    SpaceChoice,
)
from apps.curation import pages as curation_pages
from apps.graph.driver import get_driver
from apps.ingest.jobs import RetryRefused, job_retry, retryable_files
from apps.ingest.models import Document, IngestJob
from apps.ingest.parsing.formats import accepted_media_types
from apps.ingest.selectors import jobs_readable, readable_documents
from apps.ingest.services import document_delete
from apps.ingest.uploads import CollectionUnavailable, UploadRefused, actor_of, uploads_submit
from apps.ledger.models import ChangeEntry
from apps.vectors.spaces import collection_space_choose, settled_spaces

router = Router()
User = AbstractBaseUser | AnonymousUser
REFUSALS: dict[int | str, Any] = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut}


def _curator(user: User, doing: str) -> None:
    if not has_role(user, CURATOR):
        raise forbidden(f"{doing} needs the curator role.")


# --- collections --------------------------------------------------------------------------------


def _collection_out(collection: Collection, user: User, documents: int, space: str | None) -> dict[str, Any]:
    return {
        "name": collection.name,
        "title": collection.title,
        "public": collection.public,
        "owner": collection.owner.get_username() if collection.owner else None,
        "owned": bool(user.is_authenticated and collection.owner_id == user.pk),
        "documents": documents,
        "space": space,
    }


@router.get("/collections", response={200: list[CollectionOut], **REFUSALS}, tags=["collections"])
def collections_list(request: HttpRequest) -> list[dict[str, Any]]:
    """The collections the caller can read."""
    readable = readable_collections(request.user)
    rows = Collection.objects.select_related("owner")
    if readable is not None:
        rows = rows.filter(name__in=readable)
    counts = dict(
        Document.objects.filter(collection__in=[c.name for c in rows]).values_list("collection").annotate(n=Count("id"))
    )
    spaces = settled_spaces(c.name for c in rows)
    return [_collection_out(c, request.user, int(counts.get(c.name, 0)), spaces.get(c.name)) for c in rows]


@router.post("/collections", response={201: CollectionOut, 409: ErrorOut, **REFUSALS}, tags=["collections"])
def collection_create(request: HttpRequest, body: CollectionIn) -> Status[dict[str, Any]]:
    """A new collection owned by the caller (curators)."""
    _curator(request.user, "Creating a collection")
    try:
        name = accounts.collection_name_check(body.name)
    except accounts.AccountsError as exc:
        raise ApiError(400, "invalid_request", f"name: {exc}") from exc
    if Collection.objects.filter(name=name).exists():
        raise ApiError(409, "conflict", f"A collection named {name!r} exists; choose another name.")
    collection = accounts.collection_ensure(name=name, owner=request.user, public=body.public)  # type: ignore[arg-type]
    if body.title:
        collection.title = body.title
        collection.save(update_fields=["title"])
    collection_space_choose(name, body.space)
    return Status(201, _collection_out(collection, request.user, 0, settled_spaces([name]).get(name)))


def _owned(request: HttpRequest, name: str) -> Collection:
    """The collection when the caller may grant it (its owner, or an admin); 404 when they cannot read it."""
    readable = readable_collections(request.user)
    collection = Collection.objects.filter(name=name).first()
    if collection is None or (readable is not None and name not in readable):
        raise not_found("collection")
    if not (collection.owner_id == request.user.pk or has_role(request.user, ADMIN)):
        raise forbidden("Only the collection's owner or an admin manages its grants.")
    return collection


@router.get("/collections/{name}/grants", response={200: list[GrantOut], **REFUSALS}, tags=["collections"])
def grants_list(request: HttpRequest, name: str) -> list[dict[str, Any]]:
    """Who besides the owner may read the collection (owner or admin)."""
    collection = _owned(request, name)
    return [
        {
            "id": grant.pk,
            "user": grant.user.get_username() if grant.user else None,
            "group": grant.group.name if grant.group else None,
            "created_at": grant.created_at,
        }
        for grant in CollectionGrant.objects.filter(collection=collection).select_related("user", "group")
    ]


@router.post("/collections/{name}/grants", response={200: GrantChangeOut, **REFUSALS}, tags=["collections"])
def grant_add(request: HttpRequest, name: str, body: GrantIn) -> dict[str, str]:
    """Let one user or one group read the collection (404 when no such user)."""
    collection = _owned(request, name)
    try:
        message = accounts.collection_grant(collection=collection.name, username=body.user, group=body.group)
    except accounts.NotFound as exc:
        raise ApiError(404, "not_found", str(exc)) from exc
    return {"message": message}


@router.delete(
    "/collections/{name}/grants/{grant_id}", response={200: GrantChangeOut, **REFUSALS}, tags=["collections"]
)
def grant_remove(request: HttpRequest, name: str, grant_id: int) -> dict[str, str]:
    """Take a grant back: its ``id`` as GET /collections/{name}/grants lists it (404 when there is none)."""
    collection = _owned(request, name)
    try:
        return {"message": accounts.collection_grant_revoke(collection=collection.name, grant_id=grant_id)}
    except accounts.NotFound as exc:
        raise ApiError(404, "not_found", str(exc)) from exc


# --- documents ----------------------------------------------------------------------------------


class DocumentFilter(Schema):
    collection: str = Field("", max_length=100, pattern=PLAIN_TEXT)
    q: str = Field("", max_length=300, pattern=PLAIN_TEXT, description="a piece of the title or path")
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=10_000_000)


def _document(request: HttpRequest, document_id: str) -> Document:
    document = readable_documents(readable_collections(request.user)).filter(id=document_id).first()
    if document is None:
        raise not_found("document")
    return document


UPLOAD_COLLECTION = {"min_length": 1, "max_length": accounts.NAME_MAX, "pattern": COLLECTION_NAME}
UPLOAD_FILES = {"min_length": 1, "max_length": settings.UPLOAD_MAX_FILES}
# Each file part's media type: what ragkg reads (the file's name and first bytes must agree on it).
UPLOAD_ENCODING = {
    "requestBody": {"content": {FORM: {"encoding": {"files": {"contentType": ", ".join(accepted_media_types())}}}}}
}


@router.post(
    "/documents",
    response={202: JobOut, 409: ErrorOut, 413: ErrorOut, **REFUSALS},
    tags=["documents"],
    openapi_extra=UPLOAD_ENCODING,
)
def documents_upload(
    request: HttpRequest,
    collection: FormEx[str, UPLOAD_COLLECTION],
    files: FileEx[list[UploadedFile], UPLOAD_FILES],
    space: Form[SpaceChoice] = "auto",
) -> Status[dict[str, Any]]:
    """Upload one or many files (multipart ``files``) into a collection (a new one is the caller's, in
    the text ``space`` given: see POST /collections); they are ingested by a job: follow it at
    /jobs/{id}. A file of a type ragkg does not read, or whose content does not match its name's
    type, is 400 and nothing is stored; a collection name taken by one the caller cannot read, 409.
    Curators."""
    _curator(request.user, "Uploading documents")
    if not files:
        raise ApiError(400, "invalid_request", "files: send at least one file")
    try:
        job = uploads_submit(user=request.user, collection=collection, files=files, space=space)
    except CollectionUnavailable as exc:
        raise ApiError(409, "conflict", str(exc)) from exc
    except UploadRefused as exc:
        raise ApiError(400, "invalid_request", str(exc)) from exc
    return Status(202, _job_out(job))


@router.get("/documents", response={200: DocumentPage, **REFUSALS}, tags=["documents"])
def documents_list(request: HttpRequest, filters: Query[DocumentFilter]) -> dict[str, Any]:
    """The readable documents, by collection and a piece of the title or path."""
    page = curation_pages.documents_filtered(
        filters=curation_pages.DocumentFilters(collection=filters.collection, text=filters.q),
        collections=readable_collections(request.user),
    )
    return {"count": page.count(), "items": list(page[filters.offset : filters.offset + filters.limit])}


def _changes(document: Document) -> list[dict[str, Any]]:
    rows = ChangeEntry.objects.filter(ref=document.id, action__startswith="document.").order_by("seq")
    return [{"seq": row.seq, "action": row.action, "time": row.time} for row in rows]


@router.get("/documents/{document_id}", response={200: DocumentDetail, **REFUSALS}, tags=["documents"])
def document_get(request: HttpRequest, document_id: str) -> dict[str, Any]:
    """One document, what the graph holds of it, and its change-log entries."""
    document = _document(request, document_id)
    graph = curation_pages.document_delete_preview(driver=get_driver(), document_id=document.id)
    counts = {
        key: graph[key]
        for key in ("in_graph", "chunks", "images", "tables", "rows", "entities_mentioned", "relations_supported")
    }
    return {**_document_fields(document), "graph": counts, "changes": _changes(document)}


def _document_fields(document: Document) -> dict[str, Any]:
    return {field: getattr(document, field) for field in DocumentOut.model_fields}


@router.get("/documents/{document_id}/deletion", response={200: DeletionPreview, **REFUSALS}, tags=["documents"])
def document_deletion_preview(request: HttpRequest, document_id: str) -> dict[str, Any]:
    """What deleting the document would remove (nothing is changed)."""
    document = _document(request, document_id)
    return {
        "document": _document_fields(document),
        "removes": curation_pages.document_delete_preview(driver=get_driver(), document_id=document.id),
    }


@router.delete("/documents/{document_id}", response={200: DeletionOut, **REFUSALS}, tags=["documents"])
def document_remove(request: HttpRequest, document_id: str) -> dict[str, Any]:
    """Delete the document: its units, vectors, and what only it supported (logged). Curators."""
    _curator(request.user, "Deleting documents")
    document = _document(request, document_id)
    driver = get_driver()
    removed = curation_pages.document_delete_preview(driver=driver, document_id=document.id)
    deleted = document_delete(driver=driver, document_id=document.id, actor=actor_of(request.user))
    return {
        "deleted": deleted,
        "removed": removed,
        "change_log_entry": curation_pages.document_deletion_entry(document.id),
    }


# --- ingestion jobs -----------------------------------------------------------------------------


def _job_out(job: IngestJob) -> dict[str, Any]:
    retryable = set(retryable_files(job))
    return {
        "id": str(job.id),
        "collection": job.collection,
        "state": job.state,
        "stage": job.stage,
        "percent": job.percent,
        "files": [
            {"number": n, "name": item["name"], "retryable": n in retryable, "retried_as": item.get("retried_as")}
            for n, item in enumerate(job.files)
        ],
        "results": job.results,
        "counts": job.counts,
        "error": job.error,
        "retry_of": str(job.retry_of_id) if job.retry_of_id else None,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
    }


def _job(request: HttpRequest, job_id: str) -> IngestJob:
    job = jobs_readable(collections=readable_collections(request.user)).filter(id=job_id).first()
    if job is None:
        raise not_found("job")
    return job


@router.get("/jobs/{job_id}", response={200: JobOut, **REFUSALS}, tags=["jobs"])
def job_get(request: HttpRequest, job_id: str) -> dict[str, Any]:
    """An ingestion job: its state, progress and each file's outcome (with its error)."""
    return _job_out(_job(request, _uuid(job_id)))


@router.post("/jobs/{job_id}/retry", response={202: JobOut, 409: ErrorOut, **REFUSALS}, tags=["jobs"])
def job_retry_create(request: HttpRequest, job_id: str, body: RetryIn) -> Status[dict[str, Any]]:
    """Queue a failed job's kept files again (all, or those numbered) as a new job. Curators."""
    _curator(request.user, "Retrying a job")
    job = _job(request, _uuid(job_id))
    try:
        retry = job_retry(job_id=str(job.id), numbers=body.files, owner=None, actor=actor_of(request.user))
    except RetryRefused as exc:
        raise ApiError(409, "conflict", str(exc)) from exc
    return Status(202, _job_out(retry))


def _uuid(value: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise not_found("job") from None
