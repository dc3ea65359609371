"""Files uploaded through the web: checked (size, count, type), then handed to an ingestion job.

One service, ``uploads_submit``, serves every upload form (``/ingest/`` and Curation → Documents):
it checks the request's files against the limits in settings, resolves the collection (a new one,
owned by the uploader, or one the uploader can read) and creates the job. A refused request stores
nothing and raises ``UploadRefused`` with a message for the form.

The type check is an allow-list by extension (the types ragkg parses) and by content: each binary
type must start with its signature, and the text types (txt, md, html, csv, tsv) must not look
binary (no NUL byte near the start, unless a UTF-16 byte-order mark says why)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.core.files.uploadedfile import UploadedFile

from apps.accounts.access import can_read
from apps.accounts.models import Collection
from apps.accounts.services import AccountsError, collection_name_check
from apps.core.admission import queue_admit
from apps.ingest.jobs import job_create
from apps.ingest.models import IngestJob
from apps.ingest.parsing import SUPPORTED_EXTENSIONS
from apps.ingest.parsing.formats import FORMATS
from apps.ingest.parsing.text import suffix_of
from apps.vectors.spaces import AUTO, collection_space_choose

User = AbstractBaseUser | AnonymousUser

SNIFF_BYTES = 8192


class UploadRefused(ValueError):
    """An upload request that is not accepted, with the reason in plain words."""


class CollectionUnavailable(UploadRefused):
    """The collection name is taken by a collection the uploader cannot read."""


@dataclass(frozen=True)
class UploadLimits:
    max_file_bytes: int
    max_request_bytes: int
    max_files: int

    @classmethod
    def from_settings(cls) -> UploadLimits:
        return cls(
            max_file_bytes=settings.UPLOAD_MAX_BYTES,
            max_request_bytes=settings.UPLOAD_MAX_REQUEST_BYTES,
            max_files=settings.UPLOAD_MAX_FILES,
        )


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:,.1f} MB"


def content_type_check(*, name: str, head: bytes) -> None:
    """Refuse a file whose extension ragkg does not parse, or whose first bytes do not match it."""
    suffix = suffix_of(name)
    if suffix not in SUPPORTED_EXTENSIONS:
        kind = f"“{suffix}” files" if suffix else "Files without an extension"
        raise UploadRefused(f"{name}: {kind} are not accepted; accepted: {', '.join(SUPPORTED_EXTENSIONS)}.")
    if not head:
        raise UploadRefused(f"{name}: the file is empty.")
    if not FORMATS[suffix].sniff(head):
        raise UploadRefused(f"{name}: the content is not a {suffix[1:].upper()} file (its first bytes do not match).")


def uploads_check(files: Sequence[UploadedFile[bytes]], limits: UploadLimits | None = None) -> None:
    """Refuse the whole request when any file breaks a limit or the allow-list (nothing is stored)."""
    limits = limits or UploadLimits.from_settings()
    if not files:
        raise UploadRefused("Choose at least one file.")
    if len(files) > limits.max_files:
        raise UploadRefused(f"At most {limits.max_files} files per upload ({len(files)} chosen).")
    total = 0
    for upload in files:
        name = upload.name or "upload"
        size = upload.size or 0
        if size > limits.max_file_bytes:
            raise UploadRefused(
                f"{name}: the file is {_megabytes(size)}, over the limit of "
                f"{_megabytes(limits.max_file_bytes)} per file."
            )
        total += size
        upload.seek(0)
        head = upload.read(SNIFF_BYTES)
        upload.seek(0)
        content_type_check(name=name, head=head)
    if total > limits.max_request_bytes:
        raise UploadRefused(
            f"The files come to {_megabytes(total)}, over the limit of "
            f"{_megabytes(limits.max_request_bytes)} per upload; upload them in several parts."
        )


def upload_collection(*, user: User, name: str) -> str:
    """The collection an upload may go into: a new one, or one the uploader can read."""
    try:
        collection = collection_name_check(name)
    except AccountsError as exc:
        raise UploadRefused(str(exc)) from exc
    if Collection.objects.filter(name=collection).exists() and not can_read(user, collection):
        # Names are global: a name in use elsewhere is refused without saying who uses it or whether
        # it holds anything (the same words as for any name the uploader may not take).
        raise CollectionUnavailable(
            f"The collection name “{collection}” is not available to you; pick one of yours or another name."
        )
    return collection


def actor_of(user: User) -> str:
    """The change-log actor of what a web user does."""
    return f"user:{user.get_username()}" if user.is_authenticated else "system:ingest"


def uploads_submit(
    *, user: User, collection: str, files: Sequence[UploadedFile[bytes]], space: str = AUTO
) -> IngestJob:
    """Check the files, resolve the collection and queue an ingestion job for them.

    A new collection is owned by ``user`` and gets the text ``space`` chosen for it (``auto``: its
    first documents' language decides); an existing one keeps its own. The job's documents are
    logged with ``user`` as actor. Raises UploadRefused (nothing stored) when the request is not
    accepted, Busy (nothing stored) when the ingestion queue is full."""
    name = upload_collection(user=user, name=collection)
    uploads_check(files)
    queue_admit("ingest", limit=settings.MAX_INGEST_QUEUE, what="ingestion queue full")
    if not Collection.objects.filter(name=name).exists():
        collection_space_choose(name, space)
    return job_create(
        collection=name,
        uploads=[(f.name or "upload", f) for f in files],
        owner=user if isinstance(user, AbstractBaseUser) else None,
        actor=actor_of(user),
    )
