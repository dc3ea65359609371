from django.urls import path

from apps.documents import views

urlpatterns = [
    path("documents/<str:document_id>/", views.document_page, name="document"),
    path("documents/<str:document_id>/pages/<int:number>", views.page_image, name="document-page"),
]
