"""Views that refuse work the way a full Celery queue does, for the admission tests."""

from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from apps.core.admission import Busy, busy_message


def queue_full(request: HttpRequest) -> HttpResponse:
    raise Busy(busy_message("answer generation queue full", 7), retry_after=7, reason="queue 'gpu' holds 9 (limit 8)")


urlpatterns = [
    path("busy-page/", queue_full),
    path("api/busy/", queue_full),
    path("", include("ragkg.urls")),
]
