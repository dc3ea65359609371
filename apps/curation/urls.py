from django.urls import path

from apps.curation import job_views, views

app_name = "curation"

urlpatterns = [
    path("curation/", views.index, name="index"),
    path("curation/entities/", views.entities, name="entities"),
    path("curation/entities/suggestions/", views.suggestions, name="suggestions"),
    path("curation/entities/suggestions/merge/", views.suggestion_merge, name="suggestion-merge"),
    path("curation/entities/suggestions/dismiss/", views.suggestion_dismiss, name="suggestion-dismiss"),
    path("curation/entities/suggestions/restore/", views.suggestion_restore, name="suggestion-restore"),
    path("curation/entities/merges/<int:seq>/undo/", views.merge_undo, name="merge-undo"),
    path("curation/entities/synonyms/review/", views.synonym_review, name="synonym-review"),
    path("curation/entities/<str:entity_id>/", views.entity_detail, name="entity"),
    path("curation/entities/<str:entity_id>/rename/", views.entity_rename, name="entity-rename"),
    path("curation/entities/<str:entity_id>/alias/", views.entity_alias, name="entity-alias"),
    path("curation/entities/<str:entity_id>/merge/", views.entity_merge, name="entity-merge"),
    path("curation/entities/<str:entity_id>/split/", views.entity_split, name="entity-split"),
    path("curation/entities/<str:entity_id>/delete/", views.entity_delete, name="entity-delete"),
    path("curation/relations/", views.relations, name="relations"),
    path("curation/relations/approve/", views.relation_review, {"approve": True}, name="relation-approve"),
    path("curation/relations/reject/", views.relation_review, {"approve": False}, name="relation-reject"),
    path("curation/relations/remove/", views.relation_remove, name="relation-remove"),
    path("curation/relations/predicate/", views.relation_predicate, name="relation-predicate"),
    path("curation/documents/", views.documents, name="documents"),
    path("curation/documents/upload/", job_views.document_upload, name="document-upload"),
    path("curation/documents/<str:document_id>/delete/", views.document_delete_view, name="document-delete"),
    path("curation/jobs/", job_views.jobs, name="jobs"),
    path("curation/feedback/", views.feedback, name="feedback"),
    path("curation/jobs/<uuid:job_id>/", job_views.job_detail, name="job"),
    path("curation/jobs/<uuid:job_id>/retry/", job_views.job_retry_view, name="job-retry"),
]
