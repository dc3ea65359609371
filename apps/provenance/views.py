"""The audit pages: answers with their provenance, one answer's token attribution, its JSON export."""

from __future__ import annotations

import uuid
from collections.abc import Collection

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.access import readable_collections
from apps.accounts.roles import audit_required
from apps.answers.models import Answer
from apps.answers.paths import path_names
from apps.graph.driver import get_driver
from apps.provenance import runs, services
from apps.provenance.pages import (
    AnswerFilters,
    answer_page_context,
    answer_readable,
    answers_page,
    exact_run_view,
    record_for_reader,
)


class AnswerFilterForm(forms.Form):
    question = forms.CharField(required=False, max_length=500, label="Question contains")
    user = forms.CharField(required=False, max_length=150, label="User")
    document = forms.CharField(required=False, max_length=500, label="Document (name, path or id)")
    date_from = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))

    def filters(self) -> AnswerFilters:
        """The filters of the fields that are valid (a wrong date is reported and ignored)."""
        self.is_valid()
        data = self.cleaned_data
        return AnswerFilters(
            question=(data.get("question") or "").strip(),
            user=(data.get("user") or "").strip(),
            document=(data.get("document") or "").strip(),
            date_from=data.get("date_from"),
            date_to=data.get("date_to"),
        )


def readable_answer(answer_id: uuid.UUID, readable: Collection[str] | None) -> Answer:
    """The answer, when the viewer may see it; else 404, exactly as for an answer that does not exist."""
    answer = get_object_or_404(Answer.objects.select_related("user"), id=answer_id)
    if not answer_readable(answer, readable):
        raise Http404("No Answer matches the given query.")  # get_object_or_404's words
    return answer


@audit_required
@require_GET
def answers(request: HttpRequest) -> HttpResponse:
    """Answers, newest first, filtered by question, user, dates and the documents they used."""
    form = AnswerFilterForm(request.GET)
    readable = readable_collections(request.user)
    page, rows = answers_page(filters=form.filters(), page=request.GET.get("page"), readable=readable)
    return render(request, "provenance/answers.html", {"form": form, "page": page, "answers": rows})


@audit_required
@require_GET
def answer_detail(request: HttpRequest, answer_id: uuid.UUID) -> HttpResponse:
    readable = readable_collections(request.user)
    answer = readable_answer(answer_id, readable)
    names, predicates = path_names(driver=get_driver(), sources=answer.sources, collections=readable)
    context = answer_page_context(answer, readable=readable, names=names, predicates=predicates)
    return render(request, "provenance/answer.html", context)


@audit_required
@require_POST
def answer_exact(request: HttpRequest, answer_id: uuid.UUID) -> HttpResponse:
    """Queue exact attribution of the answer, then back to its page with what happened."""
    answer = readable_answer(answer_id, readable_collections(request.user))
    try:
        run = runs.exact_request(answer, user=request.user)
    except services.ProvenanceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Exact attribution is queued ({run.total} passes); its progress shows below.")
    return redirect("provenance:answer", answer_id=answer.id)


@audit_required
@require_GET
def answer_exact_status(request: HttpRequest, answer_id: uuid.UUID) -> HttpResponse:
    """The exact attribution's progress: the answer page's part that htmx polls while it runs."""
    answer = readable_answer(answer_id, readable_collections(request.user))
    context = {"answer": answer, "exact_run": exact_run_view(answer), "polled": True}
    return render(request, "provenance/answer.html#exact-status", context)


@audit_required
@require_POST
def answer_exact_cancel(request: HttpRequest, answer_id: uuid.UUID) -> HttpResponse:
    """Cancel the answer's queued or running exact attribution, then back to its page."""
    answer = readable_answer(answer_id, readable_collections(request.user))
    try:
        run = runs.exact_cancel(answer=answer, user=request.user)
    except services.ProvenanceError as exc:
        messages.error(request, str(exc))
    else:
        done = "cancelled" if run.state == run.CANCELLED else "stops after the pass it is running"
        messages.success(request, f"Exact attribution {done} ({run.done}/{run.total} passes done).")
    return redirect("provenance:answer", answer_id=answer.id)


@audit_required
@require_GET
def answer_export(request: HttpRequest, answer_id: uuid.UUID) -> HttpResponse:
    readable = readable_collections(request.user)
    answer = readable_answer(answer_id, readable)
    record = record_for_reader(services.provenance_record(answer), readable)
    response = JsonResponse(record, json_dumps_params={"ensure_ascii": False})
    response["Content-Disposition"] = f'attachment; filename="answer-{answer.id}.json"'
    return response
