from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from apps.observability.metrics import metrics_text


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The Prometheus text exposition; open to scrapers (no login), 404 when METRICS_ENABLED is off."""
    if not settings.METRICS_ENABLED:
        raise Http404("metrics are disabled")
    payload, content_type = metrics_text()
    return HttpResponse(payload, content_type=content_type)
