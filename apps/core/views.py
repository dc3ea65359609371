from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.graph.driver import get_driver
from apps.graph.selectors import graph_node_counts


@require_GET
def graph_overview(request: HttpRequest) -> HttpResponse:
    """Node counts per label; needs Neo4j (a 503 page explains when it is down)."""
    counts = graph_node_counts(driver=get_driver())
    return render(request, "core/graph.html", {"counts": counts, "total": sum(counts.values())})
