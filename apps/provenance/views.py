"""The audit pages: answers with their provenance, one answer's token attribution, its JSON export."""

from __future__ import annotations

import uuid

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.answers.models import Answer
from apps.provenance import services
from apps.provenance.access import audit_required
from apps.provenance.pages import AnswerFilters, answer_page_context, answers_page


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


@audit_required
@require_GET
def answers(request: HttpRequest) -> HttpResponse:
    """Answers, newest first, filtered by question, user, dates and the documents they used."""
    form = AnswerFilterForm(request.GET)
    page, rows = answers_page(filters=form.filters(), page=request.GET.get("page"))
    return render(request, "provenance/answers.html", {"form": form, "page": page, "answers": rows})


@audit_required
@require_GET
def answer_detail(request: HttpRequest, answer_id: uuid.UUID) -> HttpResponse:
    answer = get_object_or_404(Answer.objects.select_related("user"), id=answer_id)
    return render(request, "provenance/answer.html", answer_page_context(answer))


@audit_required
@require_POST
def answer_exact(request: HttpRequest, answer_id: uuid.UUID) -> HttpResponse:
    """Queue exact attribution of the answer, then back to its page with what happened."""
    answer = get_object_or_404(Answer, id=answer_id)
    try:
        task_id = services.exact_request(answer)
    except services.ProvenanceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Exact attribution is queued (task {task_id}); reload this page in a few minutes.")
    return redirect("provenance:answer", answer_id=answer.id)


@audit_required
@require_GET
def answer_export(request: HttpRequest, answer_id: uuid.UUID) -> HttpResponse:
    answer = get_object_or_404(Answer.objects.select_related("user"), id=answer_id)
    response = JsonResponse(services.provenance_record(answer), json_dumps_params={"ensure_ascii": False})
    response["Content-Disposition"] = f'attachment; filename="answer-{answer.id}.json"'
    return response
