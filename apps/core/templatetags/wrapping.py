"""``{% load wrapping %}``: ``name|wrappable`` lets a long file name wrap after its separators
(``_ - . /``) instead of in the middle of a word."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

SEPARATORS = re.compile(r"([_\-./\\])")


@register.filter
def wrappable(value: object) -> SafeString:
    """The text, escaped, with a line-break opportunity (``<wbr>``) after each separator."""
    return mark_safe(SEPARATORS.sub(r"\1<wbr>", escape(str(value))))  # escaped first
