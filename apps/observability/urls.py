from django.urls import path

from apps.observability import views

urlpatterns = [
    path("metrics", views.metrics, name="metrics"),
]
