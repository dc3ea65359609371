from django.urls import path

from apps.ingest import views

urlpatterns = [
    path("ingest/", views.jobs, name="ingest-jobs"),
    path("ingest/jobs/<uuid:job_id>/", views.job_detail, name="ingest-job"),
]
