from django.urls import path

from apps.core import graph_views

urlpatterns = [
    path("graph/", graph_views.graph_explorer, name="graph-overview"),
    path("graph/api/search", graph_views.graph_search, name="graph-search"),
    path("graph/api/neighbourhood/<str:entity_id>", graph_views.graph_neighbourhood, name="graph-neighbourhood"),
    path("graph/api/entity/<str:entity_id>/units", graph_views.graph_entity_units, name="graph-entity-units"),
    path("graph/api/answer/<uuid:answer_id>", graph_views.graph_answer, name="graph-answer"),
]
