from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("apps.accounts.urls")),
    path("", include("apps.api.urls")),
    path("", include("apps.health.urls")),
    path("", include("apps.observability.urls")),
    path("", include("apps.ingest.urls")),
    path("", include("apps.answers.urls")),
    path("", include("apps.provenance.urls")),
    path("", include("apps.ledger.urls")),
    path("", include("apps.curation.urls")),
    path("", include("apps.documents.urls")),
    path("", include("apps.explorer.urls")),
]
