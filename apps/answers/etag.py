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

from django.http import HttpRequest, HttpResponseBase, HttpResponseNotModified
from django.utils.cache import patch_vary_headers

from apps.answers.models import Answer
from apps.answers.services import answer_result
from apps.ledger.services import LedgerError, tree_head


def stood_on_root(answer: Answer) -> str:
    """The root of the change log's tree at the size the answer stood on ("" when unknown)."""
    size = answer.ledger.get("tree_size") if isinstance(answer.ledger, dict) else None
    if not isinstance(size, int):
        return ""
    try:
        return tree_head(size).root
    except LedgerError:
        return ""


def answer_etag(answer: Answer, result: dict[str, Any] | None = None, *, extra: str = "") -> str:
    """The tag: the answer (``answer_result``'s dict, computed unless given), the root it stood on, and
    ``extra`` (what else a page shows, such as the reader's own feedback)."""
    body = json.dumps(result if result is not None else answer_result(answer), sort_keys=True, default=str)
    digest = hashlib.sha256(f"{body}\n{stood_on_root(answer)}\n{extra}".encode()).hexdigest()
    return f'"{digest}"'


def etag_matches(request: HttpRequest, etag: str) -> bool:
    wanted = request.headers.get("If-None-Match", "")
    tags = {tag.strip().removeprefix("W/") for tag in wanted.split(",")}
    return etag in tags or "*" in tags


def etag_respond(request: HttpRequest, etag: str, respond: Callable[[], HttpResponseBase]) -> HttpResponseBase:
    """304 when the caller holds ``etag``; otherwise ``respond()``; either way with the tag and the
    caching headers."""
    response: HttpResponseBase = HttpResponseNotModified() if etag_matches(request, etag) else respond()
    response["ETag"] = etag
    response["Cache-Control"] = "no-cache"
    patch_vary_headers(response, ("Cookie", "Authorization"))
    return response
