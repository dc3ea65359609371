from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from apps.core.http import HtmxHttpRequest
from apps.health.checks import run_checks
from apps.health.pages import generator_choice


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Every dependency's status as JSON: 200 when all are up, 503 otherwise."""
    results = run_checks()
    healthy = all(result.ok for result in results)
    body = {"status": "ok" if healthy else "degraded", "checks": {r.name: r.as_dict() for r in results}}
    return JsonResponse(body, status=200 if healthy else 503)


@never_cache
@require_GET
def status_page(request: HtmxHttpRequest) -> HttpResponse:
    """The same report for people; htmx refreshes the table in place."""
    results = run_checks()
    context = {"results": results, "healthy": all(r.ok for r in results)}
    if not request.htmx:
        context["generator"] = generator_choice()
    template = "health/status.html#report" if request.htmx else "health/status.html"
    return render(request, template, context)
