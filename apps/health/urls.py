from django.urls import path

from apps.health import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("status/", views.status_page, name="status"),
]
