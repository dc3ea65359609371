from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.accounts.access import readable_collections
from apps.graph.driver import get_driver
from apps.graph.selectors import graph_node_counts


@require_GET
def graph_overview(request: HttpRequest) -> HttpResponse:
    """Node counts per label, of the collections the visitor may read (admins: the whole graph); needs Neo4j
    (a 503 page explains when it is down)."""
    collections = readable_collections(request.user)
    counts = graph_node_counts(driver=get_driver(), collections=collections)
    context = {"counts": counts, "total": sum(counts.values()), "whole": collections is None}
    return render(request, "core/graph.html", context)
