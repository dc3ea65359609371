"""Views that fail the way a down dependency fails, for the middleware tests."""

import neo4j.exceptions
import redis.exceptions
from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def neo4j_down(request: HttpRequest) -> HttpResponse:
    raise neo4j.exceptions.ServiceUnavailable("Couldn't connect to 127.0.0.1:7687")


def redis_down(request: HttpRequest) -> HttpResponse:
    raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379")


def bug(request: HttpRequest) -> HttpResponse:
    raise ValueError("a programming error")


urlpatterns = [
    path("graph-page/", neo4j_down),
    path("api/queue/", redis_down),
    path("bug/", bug),
    path("", include("ragkg.urls")),
]
