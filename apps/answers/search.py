"""The search page (``/ask/``): a question form, answered on the server; works without JavaScript.

The answer comes back with its "[n]" citations as links to the numbered sources, and a link to
its audit page, where every token's provenance is shown. Only the collections the user can read
are searched (``answer_scope``, as in the JSON API).
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from apps.answers import services
from apps.answers.scope import answer_scope
from apps.answers.tools import default_tools, retrieval_params
from apps.answers.types import AnswerError

MARKER = re.compile(r"(\[\d+\])")


class QuestionForm(forms.Form):
    question = forms.CharField(
        max_length=services.MAX_QUESTION_CHARS, widget=forms.TextInput(attrs={"autofocus": True})
    )
    collection = forms.CharField(required=False, max_length=200, label="Collection (empty: all you can read)")
    evidence_only = forms.BooleanField(required=False, label="Evidence only (no generated answer)")


def answer_segments(answer: str) -> list[dict[str, Any]]:
    """The answer cut into plain text and citation markers (``number`` set for a marker)."""
    return [
        {"text": piece, "number": int(piece[1:-1]) if MARKER.fullmatch(piece) else None}
        for piece in MARKER.split(answer)
        if piece
    ]


@require_http_methods(["GET", "POST"])
def search(request: HttpRequest) -> HttpResponse:
    form = QuestionForm(request.POST or None)
    context: dict[str, Any] = {"form": form}
    if request.method == "POST" and form.is_valid():
        collection = form.cleaned_data["collection"].strip()
        try:
            result = services.answer_ask(
                question=form.cleaned_data["question"],
                collections=answer_scope(user=request.user, requested=[collection] if collection else None),
                generate=not form.cleaned_data["evidence_only"],
                mode="graph",
                user=request.user if request.user.is_authenticated else None,
                tools=default_tools(),
                params=retrieval_params(mode="graph"),
            )
        except AnswerError as exc:
            context["error"] = exc.message
        else:
            context.update(result=result, segments=answer_segments(result["answer"]))
    return render(request, "answers/search.html", context)
