"""What the search page renders for one answer: the cited text, the numbered sources with their
supporting sentences, graph path drawings and the latency bar, and the links its reader may follow."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser

from apps.accounts.access import readable_collections
from apps.accounts.roles import can_audit
from apps.answers.display import latency_stages, source_views
from apps.answers.feedback import feedback_of
from apps.answers.models import Answer
from apps.answers.paths import path_names, source_drawings
from apps.graph.driver import get_driver
from apps.provenance.services import answer_token_provenance

MARKER = re.compile(r"(\[\d+\])")


def answer_segments(answer: str) -> list[dict[str, Any]]:
    """The answer cut into plain text and citation markers (``number`` set for a marker)."""
    return [
        {"text": piece, "number": int(piece[1:-1]) if MARKER.fullmatch(piece) else None}
        for piece in MARKER.split(answer)
        if piece
    ]


def answer_streaming(answer: Answer) -> bool:
    """Whether the answer's tokens are still to come (its page then streams them)."""
    return answer.state in (Answer.RETRIEVED, Answer.GENERATING)


def answer_context(answer: Answer, *, user: AbstractBaseUser | AnonymousUser) -> dict[str, Any]:
    """The template context of one answer (the ``result`` partial of answers/search.html)."""
    streaming = answer_streaming(answer)
    tokens = [] if streaming else answer_token_provenance(answer)
    names, predicates = path_names(driver=get_driver(), sources=answer.sources, collections=readable_collections(user))
    drawings = source_drawings(answer.sources, names=names, predicates=predicates)
    sources = [
        {**view, "drawings": drawings.get(str(view.get("id")), [])}
        for view in source_views(answer.sources, tokens, f"{answer.question} {answer.answer}")
    ]
    stages = latency_stages(answer.timings_ms)
    return {
        "answer": answer,
        "streaming": streaming,
        "segments": answer_segments(answer.answer),
        "sources": sources,
        "stages": stages,
        "total_ms": round(sum(stage.ms for stage in stages), 1),
        "traced_tokens": len(tokens),
        "may_audit": can_audit(user),
        "feedback": None if streaming else feedback_of(answer, user),
    }
