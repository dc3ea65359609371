from django.urls import path

from apps.answers import media, search, views

urlpatterns = [
    path("", search.search, name="home"),
    path("api/ask", views.ask, name="api-ask"),
    path("ask/", search.search, name="search"),
    path("ask/<uuid:answer_id>/", search.answer_page, name="answer"),
    path("ask/<uuid:answer_id>/stream", search.answer_stream, name="answer-stream"),
    path("ask/<uuid:answer_id>/feedback", search.answer_feedback, name="answer-feedback"),
    path("ask/<uuid:answer_id>/stop", search.answer_stop_view, name="answer-stop"),
    path("history/", search.history, name="history"),
    path("media/images/<str:image_id>/<str:variant>", media.image_file, name="image-file"),
]
