from django.urls import path

from apps.answers import views

urlpatterns = [
    path("api/ask", views.ask, name="api-ask"),
]
