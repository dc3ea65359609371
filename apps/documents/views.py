"""The document viewer: ``/documents/<id>/``, opened at what a source or citation cites
(``?unit=<unit id>&start=<offset>&end=<offset>#cited``): the cited sentence marked and scrolled to, a
table's cited row and cell, an image full size with its labels and OCR text. A document the reader
may not read is a 404, like a missing one. The change-log entry that put the document in (a link for
auditors) and the reader's own answers that used it are one click away."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.accounts.access import readable_collections
from apps.accounts.roles import can_audit
from apps.answers.access import SESSION_KEY
from apps.answers.media import media_file, media_response
from apps.answers.models import Answer
from apps.documents.reading import CHUNK_WINDOW, Citation, document_read, document_view
from apps.graph.driver import get_driver
from apps.ledger.services import knowledge_stand

ANSWERS_LOOKED_AT = 200  # the reader's newest answers searched for ones that used the document
ANSWERS_SHOWN = 10
UNIT_ID_CHARS = 128


def _int(value: str | None) -> int | None:
    try:
        number = int(value or "")
    except ValueError:
        return None
    return number if 0 <= number < 10**9 else None


def citation_of(request: HttpRequest) -> Citation:
    return Citation(
        unit=request.GET.get("unit", "")[:UNIT_ID_CHARS],
        start=_int(request.GET.get("start")),
        end=_int(request.GET.get("end")),
    )


def answers_using(request: HttpRequest, document_id: str) -> list[Answer]:
    """The reader's own newest answers (a logged-in user's, or this browser session's) that drew on
    the document."""
    if request.user.is_authenticated:
        answers = Answer.objects.filter(user=request.user)
    else:
        remembered = []
        for value in request.session.get(SESSION_KEY, []):
            try:
                remembered.append(uuid.UUID(str(value)))
            except ValueError:
                continue
        answers = Answer.objects.filter(id__in=remembered, user=None)
    rows = answers.order_by("-created_at").only("id", "question", "sources", "created_at")[:ANSWERS_LOOKED_AT]
    used = [a for a in rows if any(s.get("document_id") == document_id for s in a.sources or [])]
    return used[:ANSWERS_SHOWN]


@require_GET
def document_page(request: HttpRequest, document_id: str) -> HttpResponse:
    view = document_view(
        driver=get_driver(),
        document_id=document_id,
        collections=readable_collections(request.user),
        citation=citation_of(request),
        at=_int(request.GET.get("at")),
    )
    if view is None:
        raise Http404("no such document")
    window = view["chunk_window"]
    context: dict[str, Any] = {
        **view,
        "entry": knowledge_stand(document_ids=[document_id])["sources"].get(document_id),
        "may_audit": can_audit(request.user),
        "answers": answers_using(request, document_id),
        "earlier": max(0, window["first"] - CHUNK_WINDOW // 2) if window["first"] > 0 else None,
        "later": window["last"] + CHUNK_WINDOW // 2 if window["last"] < window["count"] else None,
    }
    return render(request, "documents/document.html", context)


@require_GET
def page_image(request: HttpRequest, document_id: str, number: int) -> FileResponse:
    """A PDF page's picture, rendered at ingestion; a 404 like a missing one for a document the reader
    may not read."""
    document = document_read(
        driver=get_driver(), document_id=document_id, collections=readable_collections(request.user)
    )
    images = list(document["page_images"]) if document else []
    if not 1 <= number <= len(images):
        raise Http404("no such page")
    return media_response(media_file(str(images[number - 1])), "image/jpeg")
