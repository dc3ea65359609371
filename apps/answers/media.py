"""The image files of the search page: ``/media/images/<image id>/thumb`` and ``.../full``.

The image is found by its graph node id, never by a path from the request: the graph gives the
stored file's path and the document's collection; a reader who cannot read that collection gets
the same 404 as for an image that does not exist, and a stored path that would leave MEDIA_ROOT
is refused.
"""

from __future__ import annotations

import mimetypes
import re
from pathlib import Path

from django.conf import settings
from django.http import FileResponse, Http404, HttpRequest
from django.views.decorators.http import require_GET

from apps.accounts.access import can_read
from apps.graph import cypher
from apps.graph.db import graph_read
from apps.graph.driver import get_driver

IMAGE_ID = re.compile(r"[0-9a-f]{32}")
VARIANTS = {"thumb": "thumbnail", "full": "path"}


def media_file(relative: str) -> Path:
    """The file ``relative`` names under MEDIA_ROOT; Http404 when it is missing or lies outside."""
    root = Path(settings.MEDIA_ROOT).resolve()
    if not relative or Path(relative).is_absolute():
        raise Http404("no such image")
    path = (root / relative).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        raise Http404("no such image")
    return path


@require_GET
def image_file(request: HttpRequest, image_id: str, variant: str) -> FileResponse:
    if variant not in VARIANTS or not IMAGE_ID.fullmatch(image_id):
        raise Http404("no such image")
    records = graph_read(get_driver(), cypher.IMAGE_FILES, id=image_id)
    if not records or not can_read(request.user, records[0]["collection"] or ""):
        raise Http404("no such image")
    path = media_file(records[0][VARIANTS[variant]] or "")
    content_type = mimetypes.guess_type(path.name)[0] or ""
    if not content_type.startswith("image/") or "svg" in content_type:  # never a document a browser would run
        content_type = "application/octet-stream"
    return media_response(path, content_type)


def media_response(path: Path, content_type: str) -> FileResponse:
    """A stored picture, privately cacheable, its type not to be sniffed."""
    response = FileResponse(path.open("rb"), content_type=content_type)
    response["Cache-Control"] = "private, max-age=3600"
    response["X-Content-Type-Options"] = "nosniff"
    return response
