from django.urls import path

from apps.explorer import views

urlpatterns = [
    path("graph/", views.graph_explorer, name="graph-overview"),
    path("graph/api/search", views.graph_search, name="graph-search"),
    path("graph/api/neighbourhood/<str:entity_id>", views.graph_neighbourhood, name="graph-neighbourhood"),
    path("graph/api/entity/<str:entity_id>/units", views.graph_entity_units, name="graph-entity-units"),
    path("graph/api/answer/<uuid:answer_id>", views.graph_answer, name="graph-answer"),
]
