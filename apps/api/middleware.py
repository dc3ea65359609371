"""JSON errors for every response under /api/v1/, also those Django or the router make before an
operation runs (an unknown path: 404; a method the path does not take: 405)."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

PREFIX = "/api/v1/"
CODES = {404: "not_found", 405: "method_not_allowed", 413: "too_large", 400: "invalid_request", 403: "forbidden"}
MESSAGES = {
    404: "No such API path; the operations are listed at /api/v1/docs.",
    405: "This path does not take that method.",
    413: "The request body is over the limit.",
    400: "The request is not valid.",
    403: "Not allowed.",
}


class ApiErrorShapeMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.path.startswith(PREFIX) or response.status_code < 400 or response.streaming:
            return response
        if str(response.get("Content-Type", "")).startswith("application/json"):
            return response
        status = response.status_code
        body = {"error": CODES.get(status, "error"), "message": MESSAGES.get(status, "The request failed.")}
        shaped = HttpResponse(json.dumps(body), status=status, content_type="application/json")
        for header in ("Allow", "Retry-After", "WWW-Authenticate"):
            if header in response:
                shaped[header] = response[header]
        return shaped
