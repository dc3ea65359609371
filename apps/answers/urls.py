from django.urls import path

from apps.answers import search, views

urlpatterns = [
    path("api/ask", views.ask, name="api-ask"),
    path("ask/", search.search, name="search"),
]
