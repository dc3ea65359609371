"""The curation pages: entities (search, one entity, rename, alias, merge, split, delete, merge
suggestions), relations (filter, approve, reject, remove, edit the predicate) and documents
(filter, delete after a preview; uploads and jobs: apps.curation.job_views). Curators only; every
action is a POST with CSRF, logged with the curator as actor, and answered with a link to its
change-log entry."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import wraps
from typing import Any

import neo4j.exceptions
from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.access import readable_collections
from apps.accounts.models import Collection
from apps.accounts.roles import CURATOR, can_audit, role_required
from apps.core.dependencies import NEO4J, DependencyUnavailable, classify, fix_for
from apps.core.http import HtmxHttpRequest
from apps.curation import pages, services, undo
from apps.curation.forms import (
    AliasForm,
    DocumentFilterForm,
    EntitySearchForm,
    MergeForm,
    PairMergeForm,
    PredicateForm,
    RelationFilterForm,
    RelationForm,
    RenameForm,
    SplitForm,
    SynonymReviewForm,
    UploadForm,
    errors_text,
)
from apps.curation.models import DismissedSuggestion, pair_key
from apps.curation.services import Curated, CurationError
from apps.curation.suggestions import PAIRS, SYNONYM_STATUSES, merge_suggestions, name_embedder, synonym_edges
from apps.graph.driver import get_driver
from apps.ingest.selectors import document_collections, readable_documents
from apps.ingest.services import document_delete
from apps.ingest.uploads import UploadLimits

View = Callable[..., HttpResponse]
MERGE_CHOICES = 10


DISMISSED_SHOWN = 50  # dismissed merge suggestions listed under the suggestions


def graph_required(view: View) -> View:
    """Neo4j out of reach (any driver or socket error) answers the 503 page of apps.core's middleware."""

    @wraps(view)
    def guarded(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except (neo4j.exceptions.DriverError, OSError) as exc:
            down = classify(exc) or DependencyUnavailable(
                NEO4J, f"cannot reach Neo4j at {settings.NEO4J_URI}", fix_for(NEO4J)
            )
            raise down from exc

    return guarded


def _actor(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


def _back(request: HttpRequest, default: str) -> HttpResponse:
    """Redirect to the form's ``next`` (a path of this site), else to ``default``."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return redirect(target)
    return redirect(default)


def _done(request: HttpRequest, text: str, result: Curated) -> None:
    """Tell what happened and its change-log entry (a link for those who may open it: auditors), and
    whether the graph follows later."""
    later = "" if result.applied else " Neo4j is unavailable: the graph follows as soon as it is back."
    if can_audit(request.user):
        link = reverse("ledger:entry", args=[result.seq])
        messages.success(
            request, format_html('{} <a href="{}">Change-log entry #{}</a>.{}', text, link, result.seq, later)
        )
    else:
        messages.success(request, format_html("{} Change-log entry #{}.{}", text, result.seq, later))


def _act(request: HttpRequest, action: Callable[[], Curated], text: str) -> Curated | None:
    """Run a curation service; its refusal becomes an error message."""
    try:
        result = action()
    except CurationError as exc:
        messages.error(request, str(exc))
        return None
    _done(request, text, result)
    return result


def _post_action(
    request: HttpRequest,
    form: forms.Form,
    action: Callable[[dict[str, Any]], Curated],
    text: str | Callable[[dict[str, Any]], str],
    guard: Callable[[dict[str, Any]], None] | None = None,
) -> Curated | None:
    """The shape of every curation POST: read the form (its errors become a message), check access
    (``guard`` raises 404), run the service with the cleaned data, and tell the outcome with the
    link to its change-log entry."""
    if not form.is_valid():
        messages.error(request, errors_text(form))
        return None
    data = form.cleaned_data
    if guard is not None:
        guard(data)
    return _act(request, lambda: action(data), text if isinstance(text, str) else text(data))


def _guard_entities(request: HttpRequest, *entity_ids: str) -> None:
    """404 for an entity that exists but that the curator cannot see (no readable mention)."""
    collections = readable_collections(request.user)
    for entity_id in entity_ids:
        if pages.entity_hidden(driver=get_driver(), entity_id=entity_id, collections=collections):
            raise Http404("no such entity")


def _guard_relation(request: HttpRequest, data: dict[str, Any]) -> None:
    if pages.relation_hidden(
        driver=get_driver(),
        source=data["source"],
        predicate=data["predicate"],
        target=data["target"],
        collections=readable_collections(request.user),
    ):
        raise Http404("no such relation")


@role_required(CURATOR)
@require_GET
def index(request: HttpRequest) -> HttpResponse:
    return render(request, "curation/index.html")


# --- entities --------------------------------------------------------------------------------


@role_required(CURATOR)
@require_GET
@graph_required
def entities(request: HtmxHttpRequest) -> HttpResponse:
    """Entities by name or alias and type, most mentioned first."""
    driver = get_driver()
    form = EntitySearchForm(request.GET, types=pages.entity_types(driver=driver))
    query, type_ = form.values()
    listing = pages.entities_page(
        driver=driver,
        query=query,
        type_=type_,
        collections=readable_collections(request.user),
        page=pages.page_number(request.GET.get("page")),
    )
    template = "curation/entities.html#results" if request.htmx else "curation/entities.html"
    return render(request, template, {"form": form, "page": listing, "query": query})


@role_required(CURATOR)
@require_GET
@graph_required
def entity_detail(request: HttpRequest, entity_id: str) -> HttpResponse:
    """An entity's names, mentions and relations, with its actions; ``merge_q`` finds merge partners."""
    driver = get_driver()
    collections = readable_collections(request.user)
    context = pages.entity_page(driver=driver, entity_id=entity_id, collections=collections)
    if context is None:
        raise Http404("no such entity")
    merge_q = request.GET.get("merge_q", "").strip()[: services.MAX_NAME]
    if merge_q:
        found = pages.entities_page(
            driver=driver, query=merge_q, type_="", collections=collections, page=1, size=MERGE_CHOICES + 1
        )
        context["merge_choices"] = [row for row in found.rows if row["id"] != entity_id][:MERGE_CHOICES]
    context.update(
        merge_q=merge_q,
        last_merge=_last_merge_of(entity_id),
        rename_form=RenameForm(initial={"name": context["entity"]["name"]}),
        alias_form=AliasForm(),
    )
    return render(request, "curation/entity.html", context)


@role_required(CURATOR)
@require_POST
@graph_required
def entity_rename(request: HttpRequest, entity_id: str) -> HttpResponse:
    _guard_entities(request, entity_id)
    _post_action(
        request,
        RenameForm(request.POST),
        lambda data: services.entity_rename(
            driver=get_driver(), entity_id=entity_id, name=data["name"], actor=_actor(request)
        ),
        lambda data: f"Renamed to “{' '.join(data['name'].split())}”.",
    )
    return redirect("curation:entity", entity_id=entity_id)


@role_required(CURATOR)
@require_POST
@graph_required
def entity_alias(request: HttpRequest, entity_id: str) -> HttpResponse:
    _guard_entities(request, entity_id)
    _post_action(
        request,
        AliasForm(request.POST),
        lambda data: services.entity_alias_add(
            driver=get_driver(), entity_id=entity_id, alias=data["alias"], actor=_actor(request)
        ),
        lambda data: f"Added the alias “{' '.join(data['alias'].split())}”.",
    )
    return redirect("curation:entity", entity_id=entity_id)


@role_required(CURATOR)
@require_POST
@graph_required
def entity_merge(request: HttpRequest, entity_id: str) -> HttpResponse:
    """Merge this entity into another one, or another one into this (``keep`` and ``drop``): first a
    page that previews the result, then (``confirmed``) the merge."""
    form = MergeForm(request.POST)
    if not form.is_valid() or entity_id not in (form.cleaned_data["keep"], form.cleaned_data["drop"]):
        messages.error(request, errors_text(form) or "a merge names this entity and one other")
        return redirect("curation:entity", entity_id=entity_id)
    keep, drop = form.cleaned_data["keep"], form.cleaned_data["drop"]
    _guard_entities(request, keep, drop)
    cancel = reverse("curation:entity", args=[entity_id])
    return _merge(request, keep, drop, action=reverse("curation:entity-merge", args=[entity_id]), cancel=cancel)


def _last_merge_of(entity_id: str) -> undo.LastMerge | None:
    """The change log's last merge when it kept this entity (shown with its Undo button)."""
    merge = undo.last_merge()
    return merge if merge is not None and merge.keep == entity_id else None


def _merge(request: HttpRequest, keep: str, drop: str, *, action: str, cancel: str) -> HttpResponse:
    """The confirmation page of merging ``drop`` into ``keep``, or, confirmed, the merge."""
    preview = pages.merge_preview(
        driver=get_driver(), keep=keep, drop=drop, collections=readable_collections(request.user)
    )
    if preview is None:
        raise Http404("no such entity")
    if request.POST.get("confirmed") != "1":
        context = {**preview, "action": action, "cancel": cancel, "fields": request.POST}
        return render(request, "curation/merge_confirm.html", context)
    kept, dropped = preview["keep"]["entity"]["name"], preview["drop"]["entity"]["name"]
    text = (
        f"Merged “{dropped}” into “{kept}”: {preview['drop']['mentions']} mention"
        f"{'' if preview['drop']['mentions'] == 1 else 's'} moved, “{dropped}” is one of its aliases now."
        " Undo it on this page while nothing else changes either entity."
    )
    result = _act(
        request, lambda: services.entity_merge(driver=get_driver(), keep=keep, drop=drop, actor=_actor(request)), text
    )
    return redirect("curation:entity", entity_id=keep) if result else redirect(cancel)


@role_required(CURATOR)
@require_POST
@graph_required
def merge_undo(request: HttpRequest, seq: int) -> HttpResponse:
    """Undo the change log's last merge (entry ``seq``): a new entry that brings the merged-away
    entity back with its mentions, relations and names."""
    merge = undo.last_merge()
    if merge is None or merge.seq != seq:
        messages.error(request, f"Only the last merge can be undone, and change-log entry #{seq} is not it.")
        return redirect("curation:entities")
    _guard_entities(request, merge.keep)
    text = f"Undid the merge of “{merge.drop_name}”: it is back with its mentions, relations and names."
    result = _act(request, lambda: services.entity_unmerge(driver=get_driver(), seq=seq, actor=_actor(request)), text)
    return redirect("curation:entity", entity_id=merge.drop if result else merge.keep)


@role_required(CURATOR)
@require_http_methods(["GET", "POST"])
@graph_required
def entity_delete(request: HttpRequest, entity_id: str) -> HttpResponse:
    """GET: what deleting the entity takes with it; POST: delete it."""
    driver = get_driver()
    if request.method == "POST":
        _guard_entities(request, entity_id)
        result = _act(
            request,
            lambda: services.entity_delete(driver=driver, entity_id=entity_id, actor=_actor(request)),
            "Deleted the entity.",
        )
        return redirect("curation:entities") if result else redirect("curation:entity", entity_id=entity_id)
    context = pages.entity_page(driver=driver, entity_id=entity_id, collections=readable_collections(request.user))
    if context is None:
        raise Http404("no such entity")
    return render(request, "curation/entity_delete.html", context)


@role_required(CURATOR)
@require_http_methods(["GET", "POST"])
@graph_required
def entity_split(request: HttpRequest, entity_id: str) -> HttpResponse:
    """GET: choose the documents whose mentions become a new entity; POST: split."""
    driver = get_driver()
    collections = readable_collections(request.user)
    context = pages.entity_page(driver=driver, entity_id=entity_id, collections=collections)
    if context is None:
        raise Http404("no such entity")
    documents = pages.entity_documents(driver=driver, entity_id=entity_id, collections=collections)
    data = request.POST if request.method == "POST" else None
    form = SplitForm(data, documents=documents, initial={"name": context["entity"]["name"]})
    if form.is_valid() and request.POST.get("confirmed") != "1":
        preview = pages.split_preview(driver=driver, entity_id=entity_id, documents=form.cleaned_data["documents"])
        context |= {"preview": preview, "new_name": form.cleaned_data["name"]}
    elif form.is_valid():
        try:
            result = services.entity_split(
                driver=driver,
                entity_id=entity_id,
                document_ids=form.cleaned_data["documents"],
                name=form.cleaned_data["name"],
                actor=_actor(request),
            )
        except CurationError as exc:
            form.add_error(None, str(exc))
        else:
            moved = form.cleaned_data["name"]
            _done(request, f"Split: the mentions in those documents belong to the new entity “{moved}” now.", result)
            return redirect("curation:entity", entity_id=result.entity_id)
    status = 400 if form.is_bound and not form.is_valid() else 200
    return render(request, "curation/entity_split.html", {**context, "form": form}, status=status)


@role_required(CURATOR)
@require_GET
@graph_required
def suggestions(request: HtmxHttpRequest) -> HttpResponse:
    """Pairs of entities that may be one, best first, each with a one-click merge.

    While the text embedder is not loaded in this process the page ranks by names alone and asks
    for the embedding ranking (``?embeddings=1``) right after it shows (htmx; a link without it)."""
    started = time.perf_counter()
    embedder = name_embedder(load=request.GET.get("embeddings") == "1")
    collections = readable_collections(request.user)
    dismissed = {(d.first, d.second) for d in DismissedSuggestion.objects.only("first", "second")}
    ranked = merge_suggestions(
        driver=get_driver(), collections=collections, embed=embedder.embed, limit=PAIRS + len(dismissed)
    )
    pairs = [p for p in ranked if pair_key(p.keep.id, p.drop.id) not in dismissed][:PAIRS]
    context = {"pairs": pairs, "embedder": embedder.state, "seconds": time.perf_counter() - started}
    if request.htmx:
        return render(request, "curation/suggestions.html#results", context)
    status = request.GET.get("synonyms", "suggested")
    status = status if status in SYNONYM_STATUSES else "suggested"
    synonyms = synonym_edges(driver=get_driver(), collections=collections, status=status)
    context |= {"synonyms": synonyms, "synonym_status": status, "synonym_statuses": SYNONYM_STATUSES}
    context["dismissed"] = DismissedSuggestion.objects.all()[:DISMISSED_SHOWN]
    return render(request, "curation/suggestions.html", context)


@role_required(CURATOR)
@require_POST
@graph_required
def suggestion_merge(request: HttpRequest) -> HttpResponse:
    """A suggested pair (or synonym edge) merged, keeping the entity with more mentions: first the
    preview, then (``confirmed``) the merge."""
    form = PairMergeForm(request.POST)
    if not form.is_valid():
        messages.error(request, errors_text(form))
        return redirect("curation:suggestions")
    first, second = form.cleaned_data["first"], form.cleaned_data["second"]
    _guard_entities(request, first, second)
    try:
        keep, drop = services.pair_order(driver=get_driver(), first=first, second=second)
    except CurationError as exc:
        messages.error(request, str(exc))
        return redirect("curation:suggestions")
    action, cancel = reverse("curation:suggestion-merge"), reverse("curation:suggestions")
    return _merge(request, keep, drop, action=action, cancel=cancel)


@role_required(CURATOR)
@require_POST
@graph_required
def suggestion_dismiss(request: HttpRequest) -> HttpResponse:
    """A suggested pair is not one: it is no longer suggested (remembered until restored)."""
    form = PairMergeForm(request.POST)
    if not form.is_valid():
        messages.error(request, errors_text(form))
        return redirect("curation:suggestions")
    first, second = pair_key(form.cleaned_data["first"], form.cleaned_data["second"])
    _guard_entities(request, first, second)
    names = pages.entity_names(driver=get_driver(), entity_ids=[first, second])
    DismissedSuggestion.objects.get_or_create(
        first=first,
        second=second,
        defaults={"first_name": names.get(first, ""), "second_name": names.get(second, ""), "actor": _actor(request)},
    )
    messages.success(
        request,
        f"Dismissed: “{names.get(first, first)}” and “{names.get(second, second)}” are no longer suggested "
        "as one (restore them under “Dismissed” below).",
    )
    return redirect("curation:suggestions")


@role_required(CURATOR)
@require_POST
def suggestion_restore(request: HttpRequest) -> HttpResponse:
    """A dismissed pair is suggested again."""
    form = PairMergeForm(request.POST)
    if form.is_valid():
        first, second = pair_key(form.cleaned_data["first"], form.cleaned_data["second"])
        deleted, _ = DismissedSuggestion.objects.filter(first=first, second=second).delete()
        if deleted:
            messages.success(request, "Restored: the pair is suggested again when it ranks.")
    return redirect("curation:suggestions")


@role_required(CURATOR)
@require_POST
@graph_required
def synonym_review(request: HttpRequest) -> HttpResponse:
    _post_action(
        request,
        SynonymReviewForm(request.POST),
        lambda data: services.synonym_review(
            driver=get_driver(),
            source=data["source"],
            target=data["target"],
            confirm=data["decision"] == "confirm",
            actor=_actor(request),
        ),
        lambda data: (
            "Confirmed: the two stay apart, linked as synonyms."
            if data["decision"] == "confirm"
            else "Rejected: answers no longer cross this edge."
        ),
        guard=lambda data: _guard_entities(request, data["source"], data["target"]),
    )
    return redirect("curation:suggestions")


# --- relations -------------------------------------------------------------------------------


@role_required(CURATOR)
@require_GET
@graph_required
def relations(request: HtmxHttpRequest) -> HttpResponse:
    """Relations by status, predicate and entity, strongest first, each with its actions."""
    driver = get_driver()
    form = RelationFilterForm(request.GET)
    listing = pages.relations_page(
        driver=driver,
        filters=form.filters(),
        collections=readable_collections(request.user),
        page=pages.page_number(request.GET.get("page")),
    )
    context = {"form": form, "page": listing, "predicates": pages.predicates(driver=driver)}
    template = "curation/relations.html#results" if request.htmx else "curation/relations.html"
    return render(request, template, context)


def _relation_action(
    request: HttpRequest, form: RelationForm, action: Callable[[dict[str, Any]], Curated], text: str
) -> HttpResponse:
    _post_action(request, form, action, text, guard=lambda data: _guard_relation(request, data))
    return _back(request, reverse("curation:relations"))


@role_required(CURATOR)
@require_POST
@graph_required
def relation_review(request: HttpRequest, approve: bool) -> HttpResponse:
    return _relation_action(
        request,
        RelationForm(request.POST),
        lambda data: services.relation_review(driver=get_driver(), approve=approve, actor=_actor(request), **data),
        "Approved the relation." if approve else "Rejected the relation.",
    )


@role_required(CURATOR)
@require_POST
@graph_required
def relation_remove(request: HttpRequest) -> HttpResponse:
    return _relation_action(
        request,
        RelationForm(request.POST),
        lambda data: services.relation_remove(driver=get_driver(), actor=_actor(request), **data),
        "Removed the relation.",
    )


@role_required(CURATOR)
@require_POST
@graph_required
def relation_predicate(request: HttpRequest) -> HttpResponse:
    return _relation_action(
        request,
        PredicateForm(request.POST),
        lambda data: services.relation_predicate_set(driver=get_driver(), actor=_actor(request), **data),
        "Changed the predicate.",
    )


# --- documents -------------------------------------------------------------------------------


def documents_response(request: HttpRequest, upload_form: UploadForm, status: int = 200) -> HttpResponse:
    """The documents page: the filtered list and the upload form (bound after a refused upload)."""
    collections = readable_collections(request.user)
    form = DocumentFilterForm(request.GET, collections=document_collections(collections))
    page = pages.documents_page(filters=form.filters(), collections=collections, page=request.GET.get("page"))
    context = {"form": form, "page": page, "upload_form": upload_form, "limits": UploadLimits.from_settings()}
    return render(request, "curation/documents.html", context, status=status)


@role_required(CURATOR)
@require_GET
def documents(request: HttpRequest) -> HttpResponse:
    """Documents of the readable collections, by collection and title or path; and an upload form."""
    return documents_response(request, upload_form(request))


def upload_form(request: HttpRequest, bound: bool = False) -> UploadForm:
    """The upload form with the collections the user may add to (``bound``: the submitted one)."""
    collections = readable_collections(request.user)
    if collections is None:  # an admin: every collection that exists
        collections = sorted(Collection.objects.values_list("name", flat=True))
    if bound:
        return UploadForm(request.POST, request.FILES, collections=collections)
    initial = settings.DEFAULT_COLLECTION if settings.DEFAULT_COLLECTION in collections else UploadForm.NEW
    return UploadForm(initial={"collection": initial}, collections=collections)


@role_required(CURATOR)
@require_http_methods(["GET", "POST"])
@graph_required
def document_delete_view(request: HttpRequest, document_id: str) -> HttpResponse:
    """GET: what deleting the document removes; POST: delete it (document, units, vectors, and what
    only it supported)."""
    document = get_object_or_404(readable_documents(readable_collections(request.user)), id=document_id)
    driver = get_driver()
    if request.method == "POST":
        document_delete(driver=driver, document_id=document.id, actor=_actor(request))
        seq = pages.document_deletion_entry(document.id)
        text = f"Deleted {document.collection}/{document.path}."
        if seq is None:
            messages.success(request, text)
        else:
            link = reverse("ledger:entry", args=[seq])
            messages.success(request, format_html('{} <a href="{}">Change-log entry #{}</a>.', text, link, seq))
        return redirect("curation:documents")
    preview = pages.document_delete_preview(driver=driver, document_id=document.id)
    return render(request, "curation/document_delete.html", {"document": document, **preview})


# --- readers' feedback on answers -------------------------------------------------------------

FEEDBACK_PAGE = 25


@role_required(CURATOR)
@require_GET
def feedback(request: HttpRequest) -> HttpResponse:
    """Readers' thumbs up / down and notes, newest first (``?vote=up|down``), on the answers whose
    sources the curator may all read; auditors get a link to each answer's audit page."""
    vote = request.GET.get("vote", "")
    rows = pages.feedback_listing(readable=readable_collections(request.user), vote=vote)
    page = Paginator(rows, FEEDBACK_PAGE).get_page(request.GET.get("page"))
    context = {"page": page, "rows": page.object_list, "vote": vote, "may_audit": can_audit(request.user)}
    return render(request, "curation/feedback.html", context)
