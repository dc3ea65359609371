"""The change-log audit pages: the log, one entry with its diff and proof, the proof bundle,
the anchors, and "verify now". Same access rule as the answers' audit pages: the auditor role,
and the entries about documents only for those who can read their collection."""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.access import readable_collections
from apps.accounts.roles import audit_required
from apps.ledger.canonical import ACTIONS
from apps.ledger.pages import (
    LogFilters,
    anchors_page,
    entries_visible,
    entry_page_context,
    entry_proof_bundle,
    log_check,
    log_head,
    log_page,
    report_for_reader,
)
from apps.ledger.services import LedgerError


class LogFilterForm(forms.Form):
    subject = forms.CharField(required=False, max_length=1200, label="Subject contains")
    actor = forms.CharField(required=False, max_length=200, label="Actor contains")
    action = forms.ChoiceField(
        required=False, label="Action", choices=[("", "any"), *((action, action) for action in sorted(ACTIONS))]
    )
    date_from = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))

    def filters(self) -> LogFilters:
        """The filters of the fields that are valid (a wrong date or action is reported and ignored)."""
        self.is_valid()
        data = self.cleaned_data
        return LogFilters(
            subject=(data.get("subject") or "").strip(),
            actor=(data.get("actor") or "").strip(),
            action=data.get("action") or "",
            date_from=data.get("date_from"),
            date_to=data.get("date_to"),
        )


class VerifyForm(forms.Form):
    graph = forms.BooleanField(required=False, label="also check the graph")


@audit_required
@require_GET
def log(request: HttpRequest) -> HttpResponse:
    """The change log, newest first, filtered by subject, actor, action and dates, under the tree head."""
    form = LogFilterForm(request.GET)
    header = log_head()
    anchored_size = header["anchor"].tree_size if header["anchor"] else 0
    page, rows = log_page(
        filters=form.filters(),
        page=request.GET.get("page"),
        anchored_size=anchored_size,
        readable=readable_collections(request.user),
    )
    context = {"form": form, "page": page, "rows": rows, "verify_form": VerifyForm(), **header}
    return render(request, "ledger/log.html", context)


@audit_required
@require_GET
def entry(request: HttpRequest, seq: int) -> HttpResponse:
    row = get_object_or_404(entries_visible(readable_collections(request.user)), seq=seq)
    return render(request, "ledger/entry.html", entry_page_context(row))


@audit_required
@require_GET
def entry_proof(request: HttpRequest, seq: int) -> HttpResponse:
    """The entry's proof bundle as a download; 409 with the reason while it is not anchored."""
    get_object_or_404(entries_visible(readable_collections(request.user)), seq=seq)
    try:
        bundle = entry_proof_bundle(seq)
    except LedgerError as exc:
        return JsonResponse({"error": str(exc)}, status=409)
    response = JsonResponse(bundle)
    response["Content-Disposition"] = f'attachment; filename="ragkg-proof-{seq}.json"'
    return response


@audit_required
@require_GET
def anchors(request: HttpRequest) -> HttpResponse:
    return render(request, "ledger/anchors.html", {"page": anchors_page(page=request.GET.get("page"))})


@audit_required
@require_POST
def verify(request: HttpRequest) -> HttpResponse:
    """Verify the log now, against the chain and, when asked, the graph; show the report."""
    form = VerifyForm(request.POST)
    graph = form.is_valid() and form.cleaned_data["graph"]
    report = report_for_reader(log_check(graph=graph), readable_collections(request.user))
    context = {"report": report, "graph": graph, "first": report.problems[0] if report.problems else None}
    return render(request, "ledger/verify.html", {**context, "verify_form": form})
