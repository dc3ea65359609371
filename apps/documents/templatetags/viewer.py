"""``{% load viewer %}``: ``{% document_url source %}``, the document viewer's address opened at what a
source cites (its unit and, where known, the supporting sentence's span), ending in ``#cited``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

from apps.documents.links import viewer_url

register = template.Library()


@register.simple_tag
def document_url(source: Mapping[str, Any]) -> str:
    """The viewer's address for a source (a dict with ``document_id``, ``id`` and maybe ``span``);
    empty when the source names no document."""
    document_id = str(source.get("document_id") or "")
    if not document_id:
        return ""
    return viewer_url(document_id, str(source.get("id") or ""), source.get("span"))
