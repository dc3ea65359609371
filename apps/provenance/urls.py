from django.urls import path

from apps.provenance import views

app_name = "provenance"

urlpatterns = [
    path("audit/answers/", views.answers, name="answers"),
    path("audit/answers/<uuid:answer_id>/", views.answer_detail, name="answer"),
    path("audit/answers/<uuid:answer_id>/exact/", views.answer_exact, name="exact"),
    path("audit/answers/<uuid:answer_id>/exact/status/", views.answer_exact_status, name="exact-status"),
    path("audit/answers/<uuid:answer_id>/exact/cancel/", views.answer_exact_cancel, name="exact-cancel"),
    path("audit/answers/<uuid:answer_id>/export.json", views.answer_export, name="export"),
]
