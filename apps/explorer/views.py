"""The graph explorer: the page ``/graph/`` and its JSON endpoints under ``/graph/api/``.

The page works without JavaScript (a search form, the results, an entity's neighbourhood and the units
that mention it as plain lists, an answer's paths); ``static/ragkg/graph.js`` draws the same data with
cytoscape.js from the JSON endpoints. Every read goes through ``apps.graph.explore`` with the reader's
collections (``collections_for``: the explorer's collection filter narrowed to what the reader may
read); an entity or answer the reader may not see is a 404, exactly like one that does not exist.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from apps.accounts.access import collections_for, readable_collections
from apps.accounts.roles import CURATOR, can_audit, has_role
from apps.answers.access import SESSION_KEY, answer_visible
from apps.answers.models import Answer
from apps.graph import explore
from apps.graph.driver import get_driver
from apps.graph.selectors import graph_node_counts
from apps.ingest.selectors import document_collections
from apps.provenance.pages import answer_readable

MAX_FILTER_VALUES = 50
NOT_FOUND = {"error": "not_found"}

User = AbstractBaseUser | AnonymousUser


def _values(request: HttpRequest, name: str) -> tuple[str, ...] | None:
    """A list parameter, repeated or comma-separated; None when absent or empty."""
    values = [v.strip() for raw in request.GET.getlist(name) for v in raw.split(",") if v.strip()]
    return tuple(dict.fromkeys(values))[:MAX_FILTER_VALUES] or None


def reader_collections(request: HttpRequest) -> list[str] | None:
    """The collections this request reads: its ``collections`` filter within what the reader may read."""
    requested = _values(request, "collections")
    return collections_for(request.user, None if requested is None else list(requested))


def _filters(request: HttpRequest) -> explore.Filters:
    return explore.Filters(types=_values(request, "types"), relations=_values(request, "relations"))


def visible_answer(request: HttpRequest, answer_id: uuid.UUID | str) -> Answer | None:
    """The answer when this request may see it: its asker (or its browser session, or an admin), as on
    its page, or an auditor who can read every collection it drew on, as on its audit page."""
    answer = Answer.objects.filter(id=answer_id).first()
    if answer is None:
        return None
    session_answers = list(request.session.get(SESSION_KEY, []))
    if answer_visible(answer, user=request.user, session_answers=session_answers):
        return answer
    if can_audit(request.user) and answer_readable(answer, readable_collections(request.user)):
        return answer
    return None


def _links(user: User, entity_id: str) -> dict[str, str | None]:
    curation = reverse("curation:entity", args=[entity_id]) if has_role(user, CURATOR) else None
    return {
        "explore": f"{reverse('graph-overview')}?entity={entity_id}",
        "units": reverse("graph-entity-units", args=[entity_id]),
        "curation": curation,
    }


def _answer_subgraph(request: HttpRequest, answer: Answer) -> dict[str, Any]:
    subgraph = explore.answer_subgraph(
        driver=get_driver(), sources=answer.sources, collections=readable_collections(request.user)
    )
    return {
        **subgraph,
        "answer": {"id": str(answer.id), "question": answer.question, "url": reverse("answer", args=[answer.id])},
    }


# --- the page -------------------------------------------------------------------------------------


def _page_context(request: HttpRequest) -> dict[str, Any]:
    driver = get_driver()
    readable = readable_collections(request.user)
    collections = reader_collections(request)
    counts = graph_node_counts(driver=driver, collections=readable)
    query = request.GET.get("q", "").strip()[: explore.QUERY_CHARS]
    entity_id = request.GET.get("entity", "").strip()
    answer_id = request.GET.get("answer", "").strip()
    context: dict[str, Any] = {
        "counts": counts,
        "total": sum(counts.values()),
        "whole": readable is None,
        "caps": explore.caps(),
        "query": query,
        "choices": document_collections(readable),
        "chosen": set(_values(request, "collections") or ()),
        "results": explore.entities_search(driver=driver, query=query, collections=collections) if query else None,
    }
    if entity_id:
        graph = explore.neighbourhood(driver=driver, entity_id=entity_id, collections=collections)
        context["entity_id"] = entity_id
        context["graph"] = graph
        if graph is not None:
            context["units"] = explore.entity_units(driver=driver, entity_id=entity_id, collections=collections)
            context["links"] = _links(request.user, entity_id)
            names = {node["id"]: node["name"] for node in graph["nodes"]}
            context["edge_rows"] = [
                {**e, "source_name": names[e["source"]], "target_name": names[e["target"]]} for e in graph["edges"]
            ]
    elif answer_id:
        try:
            answer = visible_answer(request, uuid.UUID(answer_id))
        except ValueError:
            answer = None
        context["answer_id"] = answer_id
        context["answer_graph"] = _answer_subgraph(request, answer) if answer is not None else None
    return context


@require_GET
def graph_explorer(request: HttpRequest) -> HttpResponse:
    """The explorer, with the node counts of the collections the visitor may read (admins: the whole
    graph) on top; needs Neo4j (a 503 page explains when it is down)."""
    return render(request, "core/graph.html", _page_context(request))


# --- JSON ---------------------------------------------------------------------------------------


@require_GET
def graph_search(request: HttpRequest) -> JsonResponse:
    """``?q=``: the readable entities whose names contain it, most mentioned first."""
    query = request.GET.get("q", "").strip()[: explore.QUERY_CHARS]
    results = explore.entities_search(driver=get_driver(), query=query, collections=reader_collections(request))
    return JsonResponse({"query": query, "results": results, "limit": explore.SEARCH_LIMIT})


@require_GET
def graph_neighbourhood(request: HttpRequest, entity_id: str) -> JsonResponse:
    """The entity's neighbourhood (``?types=``, ``?relations=``, ``?collections=`` filter it), capped."""
    graph = explore.neighbourhood(
        driver=get_driver(), entity_id=entity_id, collections=reader_collections(request), filters=_filters(request)
    )
    if graph is None:
        return JsonResponse(NOT_FOUND, status=404)
    return JsonResponse({**graph, "links": _links(request.user, entity_id)})


@require_GET
def graph_entity_units(request: HttpRequest, entity_id: str) -> JsonResponse:
    """The readable chunks, rows and images that mention the entity, with their documents."""
    units = explore.entity_units(driver=get_driver(), entity_id=entity_id, collections=reader_collections(request))
    if units is None:
        return JsonResponse(NOT_FOUND, status=404)
    for unit in units["units"]:
        if unit["label"] == "Image":
            unit["thumb"] = reverse("image-file", args=[unit["id"], "thumb"])
            unit["full"] = reverse("image-file", args=[unit["id"], "full"])
    return JsonResponse({**units, "links": _links(request.user, entity_id)})


@require_GET
def graph_answer(request: HttpRequest, answer_id: uuid.UUID) -> JsonResponse:
    """The subgraph of the answer's paths, its sources marked; 404 for an answer the reader may not see."""
    answer = visible_answer(request, answer_id)
    if answer is None:
        return JsonResponse(NOT_FOUND, status=404)
    return JsonResponse(_answer_subgraph(request, answer))
