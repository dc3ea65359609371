import pytest
from django.test import Client

pytestmark = pytest.mark.urls("tests.unit.failing_urls")


def test_down_graph_gives_a_clear_page_not_a_traceback(client: Client) -> None:
    response = client.get("/graph-page/")
    assert response.status_code == 503
    assert response["Retry-After"] == "10"
    body = response.content.decode()
    assert "Neo4j knowledge graph is not available" in body
    assert "make up" in body
    assert "Traceback" not in body and "ServiceUnavailable" not in body


def test_api_requests_get_json(client: Client) -> None:
    response = client.get("/api/queue/")
    assert response.status_code == 503
    assert response.json()["error"] == "service_unavailable"
    assert response.json()["service"] == "redis"
    assert response.json()["fix"].startswith("make up")


def test_json_when_asked_for(client: Client) -> None:
    response = client.get("/graph-page/", headers={"accept": "application/json"})
    assert response.json()["service"] == "neo4j"


def test_programming_errors_are_not_disguised() -> None:
    client = Client(raise_request_exception=False)
    response = client.get("/bug/")
    assert response.status_code == 500
    assert "Something went wrong" in response.content.decode()
    assert "a programming error" not in response.content.decode()
