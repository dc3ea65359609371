"""Turn a down dependency into a clear 503 page (or JSON), never a traceback."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from apps.core.dependencies import LABELS, classify

logger = logging.getLogger(__name__)


def wants_json(request: HttpRequest) -> bool:
    if request.path.startswith("/api/") or request.path == "/healthz":
        return True
    accept = request.headers.get("Accept", "")
    return "application/json" in accept and "text/html" not in accept


class ServiceUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        down = classify(exception)
        if down is None:
            return None
        logger.warning("%s %s: %s", request.method, request.path, down)
        payload = {
            "service": down.service,
            "label": LABELS.get(down.service, down.service),
            "reason": down.reason,
            "fix": down.fix,
        }
        if wants_json(request):
            response: HttpResponse = JsonResponse({"error": "service_unavailable", **payload}, status=503)
        else:
            response = render(request, "503.html", payload, status=503)
        response["Retry-After"] = "10"
        return response
