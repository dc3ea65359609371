"""``{% load viewer %}``: ``{% document_url source %}``, the document viewer's address opened at what a
source cites (its unit and, where known, the supporting sentence's span), ending in ``#cited``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from django import template
from django.urls import reverse

register = template.Library()


def viewer_url(document_id: str, unit: str = "", span: Sequence[int] | None = None) -> str:
    """``/documents/<id>/?unit=…&start=…&end=…#cited`` (the query only with what is known)."""
    params: dict[str, Any] = {}
    if unit:
        params["unit"] = unit
    if span is not None and len(span) == 2:
        params["start"], params["end"] = int(span[0]), int(span[1])
    query = f"?{urlencode(params)}" if params else ""
    return f"{reverse('document', args=[document_id])}{query}{'#cited' if unit else ''}"


@register.simple_tag
def document_url(source: Mapping[str, Any]) -> str:
    """The viewer's address for a source (a dict with ``document_id``, ``id`` and maybe ``span``);
    empty when the source names no document."""
    document_id = str(source.get("document_id") or "")
    if not document_id:
        return ""
    return viewer_url(document_id, str(source.get("id") or ""), source.get("span"))
