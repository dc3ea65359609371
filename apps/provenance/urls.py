from django.urls import path

from apps.provenance import views

app_name = "provenance"

urlpatterns = [
    path("audit/answers/", views.answers, name="answers"),
    path("audit/answers/<uuid:answer_id>/", views.answer_detail, name="answer"),
    path("audit/answers/<uuid:answer_id>/exact/", views.answer_exact, name="exact"),
    path("audit/answers/<uuid:answer_id>/export.json", views.answer_export, name="export"),
]
