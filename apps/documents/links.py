"""The document viewer's address of a cited place: the document, the unit and, where known, the
supporting sentence's span (used by templates through ``{% document_url %}`` and by pages that
build links in Python, such as curation's relation evidence)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse


def viewer_url(document_id: str, unit: str = "", span: Sequence[int] | None = None) -> str:
    """``/documents/<id>/?unit=…&start=…&end=…#cited`` (the query only with what is known)."""
    params: dict[str, Any] = {}
    if unit:
        params["unit"] = unit
    if span is not None and len(span) == 2:
        params["start"], params["end"] = int(span[0]), int(span[1])
    query = f"?{urlencode(params)}" if params else ""
    return f"{reverse('document', args=[document_id])}{query}{'#cited' if unit else ''}"
