from django.urls import path

from apps.core import views

urlpatterns = [
    path("graph/", views.graph_overview, name="graph-overview"),
]
