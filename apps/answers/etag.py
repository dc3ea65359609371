"""Answers as cacheable HTTP resources: an ``ETag`` made from the answer and the change-log tree head it
stood on, and ``If-None-Match`` answered with 304.

The tag is the SHA-256 of the answer as the API gives it (text, sources, token provenance, citations,
the log position and the entry behind each source) and of the tree head's root at the answer's
position, so a client that holds a tag can check what it got against the anchored root of that head
(``GET /api/v1/changes/...``, docs/ledger.md) and an edge proxy can store the response and revalidate
it cheaply. Responses say ``Cache-Control: no-cache`` (a cache may keep them but must ask again each
time: access is checked on every request) and ``Vary: Cookie, Authorization`` (one copy per caller).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponseBase, HttpResponseNotModified
from django.utils.cache import patch_vary_headers

from apps.accounts.access import readable_collections
from apps.accounts.roles import can_audit
from apps.answers.cache import log_position
from apps.answers.feedback import feedback_of
from apps.answers.models import Answer
from apps.ledger.services import LedgerError, tree_head


def stood_on_root(ledger: Any) -> str:
    """The root of the change log's tree at the size an answer's ``ledger`` stood on ("" when unknown)."""
    size = ledger.get("tree_size") if isinstance(ledger, dict) else None
    if not isinstance(size, int):
        return ""
    try:
        return tree_head(size).root
    except LedgerError:
        return ""


def answer_etag(result: dict[str, Any], *, extra: str = "") -> str:
    """The tag: the answer (``answer_result``'s dict), the root of the log it stood on (its ``ledger``),
    and ``extra`` (what else a page shows, such as the reader's own feedback)."""
    body = json.dumps(result, sort_keys=True, default=str)
    digest = hashlib.sha256(f"{body}\n{stood_on_root(result.get('ledger'))}\n{extra}".encode()).hexdigest()
    return f'"{digest}"'


def page_state(answer: Answer, user: AbstractBaseUser | AnonymousUser) -> str:
    """What the answer page shows besides the answer: the reader's own feedback, whether they may audit,
    the collections they can read (path names are shown from those), and the change log's size (an
    entity renamed or merged since changes the path names the page shows)."""
    mine = feedback_of(answer, user)
    readable = readable_collections(user)
    return json.dumps(
        {
            "feedback": None if mine is None else [mine.vote, mine.note],
            "audit": can_audit(user),
            "readable": None if readable is None else sorted(readable),
            "log": log_position(),
        },
        sort_keys=True,
    )


def etag_matches(request: HttpRequest, etag: str) -> bool:
    wanted = request.headers.get("If-None-Match", "")
    tags = {tag.strip().removeprefix("W/") for tag in wanted.split(",")}
    return etag in tags or "*" in tags


def etag_respond(request: HttpRequest, etag: str, respond: Callable[[], HttpResponseBase]) -> HttpResponseBase:
    """304 when the caller holds ``etag``; otherwise ``respond()``; either way with the tag and the
    caching headers."""
    response: HttpResponseBase = HttpResponseNotModified() if etag_matches(request, etag) else respond()
    etag_headers(response, etag)
    return response


def etag_headers(response: HttpResponseBase, etag: str) -> None:
    """The tag and the caching headers every tagged answer response carries."""
    response["ETag"] = etag
    response["Cache-Control"] = "no-cache"
    patch_vary_headers(response, ("Cookie", "Authorization"))
