"""The generated answer as users read it: scaffolding removed, and its short answer (the first line).

The prompt asks for the short answer alone on the first line, then one sentence of support
(apps/answers/prompt.py). Small models still sometimes open with a label ("Answer:", "The answer
to this question is:") or echo a source header ("[2] (passage from …)"); ``answer_clean`` takes
those off before attribution, so neither the text nor its citations show them.
"""

from __future__ import annotations

import re

from apps.provenance.citations import MODEL_MARKER

LEAD_LABEL = re.compile(
    r"^\s*(?:(?:short\s+)?answer|the\s+answer(?:\s+to\s+(?:this|the)\s+question)?\s+is|support(?:ing sentence)?)"
    r"\s*[:\-\u2013]\s*",
    re.IGNORECASE,
)
SOURCE_HEADER = re.compile(r"^\s*\[\d+\]\s*\((?:passage|table row|image description) from [^)\n]*\)\s*", re.MULTILINE)


def answer_clean(text: str) -> str:
    """``text`` without leading labels on any line and without echoed source headers."""
    text = SOURCE_HEADER.sub("", text)
    lines = [LEAD_LABEL.sub("", line) for line in text.strip().splitlines()]
    return "\n".join(line.rstrip() for line in lines if line.strip()).strip()


def lines_written(text: str) -> int:
    """How many lines of ``text`` are finished (ended by a line break) and not blank."""
    return sum(1 for line in text.split("\n")[:-1] if line.strip())


def short_answer(text: str) -> str:
    """The short answer: the first non-empty line of the cleaned answer, without citation markers
    and without a final full stop."""
    lines = answer_clean(text).splitlines()
    first = MODEL_MARKER.sub("", lines[0]).strip() if lines else ""
    return first[:-1].rstrip() if first.endswith(".") else first
