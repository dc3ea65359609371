from django.urls import path

from apps.documents import views

urlpatterns = [
    path("documents/<str:document_id>/", views.document_page, name="document"),
]
