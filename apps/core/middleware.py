"""Turn a down dependency into a clear 503 page (or JSON), never a traceback."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render

from apps.core.admission import Busy, InflightLimit, busy_message, expensive
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


def busy_response(request: HttpRequest, busy: Busy) -> HttpResponse:
    """A 503 for a refused request: JSON for the API, the 503 page otherwise, with Retry-After."""
    logger.info("shed %s %s: %s", request.method, request.path, busy.reason)
    if wants_json(request):
        response: HttpResponse = JsonResponse(
            {"error": busy.kind, "message": busy.message, "retry_after": busy.retry_after}, status=503
        )
    else:
        heading = "Busy" if busy.kind == "busy" else "No worker for this"
        response = render(request, "503.html", {"busy": True, "heading": heading, "reason": busy.message}, status=503)
    response["Retry-After"] = str(busy.retry_after)
    # Logged above, at INFO: a shed request is the server working as meant, not an error for
    # django.request to log as one.
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


class _Releasing:
    """A streaming body that releases its admission slot when the server closes it (once)."""

    def __init__(self, content: Iterator[Any], release: Callable[[], None]) -> None:
        self._content = content
        self._release: Callable[[], None] | None = release

    def __iter__(self) -> _Releasing:
        return self

    def __next__(self) -> Any:
        return next(self._content)

    def close(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()


class AdmissionMiddleware:
    """At most RAGKG_MAX_INFLIGHT expensive requests at once in this process; the rest get a 503 with
    Retry-After at once. Also turns ``Busy`` (a full Celery queue) raised by a view into that 503."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        self.limit = InflightLimit(settings.MAX_INFLIGHT)

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not expensive(request):
            return self.get_response(request)
        if not self.limit.acquire():
            retry = settings.SHED_RETRY_AFTER
            what = f"{self.limit.limit} requests running in this process"
            return busy_response(request, Busy(busy_message(what, retry), retry_after=retry, reason=what))
        try:
            response = self.get_response(request)
        except BaseException:
            self.limit.release()
            raise
        content = response.streaming_content if isinstance(response, StreamingHttpResponse) else None
        if isinstance(content, Iterator):  # the work goes on while the body streams
            assert isinstance(response, StreamingHttpResponse)
            response.streaming_content = _Releasing(content, self.limit.release)
        else:
            self.limit.release()
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, Busy):
            return busy_response(request, exception)
        return None
