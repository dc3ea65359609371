"""Text around a mention or a relation, as the curation pages and the graph explorer show it: a snippet
of a unit's text cut at spaces around a mention, and the one sentence that supports a relation (read by
``RELATION_EVIDENCE`` in ``apps.graph.cypher.common``)."""

from __future__ import annotations

from typing import Any

SNIPPET_CONTEXT = 90  # characters either side of a mention


def snippet(text: str, start: int | None, end: int | None, context: int = SNIPPET_CONTEXT) -> dict[str, str]:
    """The mention in ``text[start:end]`` with up to ``context`` characters either side (cut at spaces)."""
    if start is None or end is None or not 0 <= start <= end <= len(text):
        cut = text[: 2 * context]
        return {"before": "", "mention": "", "after": cut + ("…" if len(text) > len(cut) else "")}
    left, right = max(0, start - context), min(len(text), end + context)
    if left > 0 and " " in text[left:start]:
        left = text.index(" ", left, start) + 1
    if right < len(text) and " " in text[end:right]:
        right = text.rindex(" ", end, right)
    return {
        "before": ("…" if left > 0 else "") + text[left:start],
        "mention": text[start:end],
        "after": text[end:right] + ("…" if right < len(text) else ""),
    }


EVIDENCE_CHARS = 300


def relation_evidence(row: Any) -> str:
    """The sentence that supports a relation (a unit's whole text when it has no sentences), at most
    ``EVIDENCE_CHARS`` characters; empty when no readable unit holds both ends in one sentence."""
    text = row.get("evidence_text") or ""
    start, end = row.get("evidence_start"), row.get("evidence_end")
    sentence = text[start:end] if isinstance(start, int) and isinstance(end, int) else text
    sentence = " ".join(sentence.split())
    return sentence if len(sentence) <= EVIDENCE_CHARS else sentence[: EVIDENCE_CHARS - 1] + "…"
