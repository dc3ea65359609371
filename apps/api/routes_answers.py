"""REST: ask (JSON or streamed), answers with their provenance, and the change log's entries and proofs."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from ninja import Router

from apps.accounts.access import readable_collections
from apps.accounts.roles import can_audit
from apps.answers.access import answer_visible
from apps.answers.etag import answer_etag, etag_headers, etag_matches, etag_respond
from apps.answers.models import Answer
from apps.answers.services import answer_result
from apps.answers.views import answer_events
from apps.api import asking
from apps.api.errors import ApiError, forbidden, not_found
from apps.api.evidence import citations_of
from apps.api.openapi import ETAG, etag_header, ndjson_response
from apps.api.schemas import AnswerOut, AskEvent, AskIn, EntryOut, ErrorOut
from apps.ledger.pages import entries_visible, entry_proof_bundle
from apps.ledger.services import LedgerError, snapshot
from apps.provenance.pages import answer_readable

router = Router()
REFUSALS: dict[int | str, Any] = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut}
BUSY: dict[int | str, Any] = {429: ErrorOut, 503: ErrorOut}


def _shaped(result: dict[str, Any]) -> dict[str, Any]:
    """An answer for REST clients: ``citations`` per [n] marker (document, unit, supporting sentence)."""
    return {**result, "error": result.get("error") or "", "citations": citations_of(result)}


STREAMED = (
    "The answer (application/json); with `stream`, application/x-ndjson: one JSON event per line, "
    "`retrieval` (the answer so far: sources, timings), `token`... (`text`), `generated`, `error` "
    "(generation failed), and last `done` (the finished answer)."
)


@router.post(
    "/ask",
    response={200: AnswerOut, **REFUSALS, **BUSY},
    tags=["answers"],
    openapi_extra=ndjson_response(AskEvent, STREAMED, headers={"ETag": ETAG}),
)
def ask(request: HttpRequest, body: AskIn, response: HttpResponse) -> Any:
    """Ask over the caller's readable collections (or the ones named among them). With ``stream`` the
    answer comes as ``application/x-ndjson`` events (``retrieval``, ``token``..., ``done``), as from
    ``POST /api/ask``. A repeated question may be answered from the answer cache (``cached_from``).
    The JSON answer carries its ``ETag`` (``GET /answers/{id}`` honours ``If-None-Match``)."""
    if not body.stream:
        result = asking.ask(
            user=request.user,
            question=body.question,
            collections=body.collections,
            mode=body.mode,
            generate=body.generate,
        )
        etag_headers(response, answer_etag(result))
        return _shaped(result)
    answer = asking.ask_start(user=request.user, question=body.question, collections=body.collections, mode=body.mode)
    streamed = StreamingHttpResponse(answer_events(answer), content_type="application/x-ndjson")
    streamed["Cache-Control"] = "no-cache"
    streamed["X-Accel-Buffering"] = "no"
    return streamed


def _answer(request: HttpRequest, answer_id: str) -> Answer:
    try:
        key = uuid.UUID(answer_id)
    except ValueError:
        raise not_found("answer") from None
    answer = Answer.objects.filter(id=key).select_related("user").first()
    if answer is None:
        raise not_found("answer")
    own = answer_visible(answer, user=request.user, session_answers=[])
    audited = can_audit(request.user) and answer_readable(answer, readable_collections(request.user))
    if not (own or audited):
        raise not_found("answer")
    return answer


@router.get(
    "/answers/{answer_id}",
    response={200: AnswerOut, 304: None, **REFUSALS},
    tags=["answers"],
    openapi_extra=etag_header(200, 304),
)
def answer_get(request: HttpRequest, answer_id: str, response: HttpResponse) -> Any:
    """One answer with its sources, token provenance and citations: the caller's own, or (auditors)
    any answer drawn only from collections they can read. Its ``ETag`` is made from the answer and the
    change-log tree head it stood on; with a matching ``If-None-Match`` the answer is 304, no body."""
    answer = _answer(request, answer_id)
    result = answer_result(answer)
    etag = answer_etag(result)
    if etag_matches(request, etag):
        return etag_respond(request, etag, HttpResponse)
    etag_headers(response, etag)
    return _shaped(result)


def _entry(request: HttpRequest, seq: int) -> Any:
    if not can_audit(request.user):
        raise forbidden("The change log needs the auditor role.")
    row = entries_visible(readable_collections(request.user)).filter(seq=seq).first()
    if row is None:
        raise not_found("change-log entry")
    return row


@router.get("/changes/{seq}", response={200: EntryOut, **REFUSALS}, tags=["change log"])
def change_get(request: HttpRequest, seq: int) -> dict[str, Any]:
    """One change-log entry and the content it hashed before and after (auditors)."""
    row = _entry(request, seq)
    fields = ("seq", "time", "actor", "action", "subject_kind", "subject_id", "before", "after", "leaf_hash")
    return {
        **{name: getattr(row, name) for name in fields},
        "content_before": snapshot(row.before),
        "content_after": snapshot(row.after),
    }


@router.get("/changes/{seq}/proof", response={200: dict[str, Any], 409: ErrorOut, **REFUSALS}, tags=["change log"])
def change_proof(request: HttpRequest, seq: int) -> dict[str, Any]:
    """The entry's proof bundle (format ``ragkg-ledger-proof/1``, checked by tools/verify_proof.py
    without ragkg); 409 ``not_anchored`` until an anchor covers it (auditors)."""
    _entry(request, seq)
    try:
        return entry_proof_bundle(seq)
    except LedgerError as exc:
        raise ApiError(409, "not_anchored", str(exc), retry_after=60) from exc
