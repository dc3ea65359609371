"""The explorer's page and JSON endpoints (apps.explorer.views) with a stand-in graph: what each persona's
collections are, 404s for what they may not see, and the page without JavaScript."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import User
from django.test import Client

from apps.accounts.services import collection_ensure
from apps.answers.models import Answer
from apps.explorer import views as graph_views
from apps.graph import cypher
from tests.unit.curation.fakes import FakeDriver

ALICE = {"id": "e1", "name": "Alice", "type": "PERSON", "mentions": 2}


@pytest.fixture
def graph(monkeypatch: pytest.MonkeyPatch, db: None) -> FakeDriver:
    collection_ensure(name="open", public=True)
    collection_ensure(name="secret")
    driver = FakeDriver(
        {
            cypher.GRAPH_ENTITY_SEARCH: [ALICE],
            cypher.GRAPH_ENTITY: lambda p: [ALICE] if p["collections"] is None or "open" in p["collections"] else [],
            cypher.GRAPH_NEIGHBOURS: [{"total": 0, "rows": []}],
            cypher.GRAPH_EDGES: [],
            cypher.CURATION_ENTITY_SNIPPETS: [],
        }
    )
    monkeypatch.setattr(graph_views, "get_driver", lambda: driver)
    monkeypatch.setattr(graph_views, "graph_node_counts", lambda **_: {"Chunk": 3, "Entity": 2})
    return driver


def test_a_visitor_reads_the_public_collections_only(client: Client, graph: FakeDriver) -> None:
    response = client.get("/graph/api/neighbourhood/e1")
    assert response.status_code == 200
    body = response.json()
    assert body["caps"] == {"nodes": 60, "edges": 150} and body["links"]["curation"] is None
    assert {tuple(p["collections"]) for _, p in graph.calls if "collections" in p} == {("open",)}


def test_asking_for_an_unreadable_collection_finds_nothing(client: Client, graph: FakeDriver) -> None:
    response = client.get("/graph/api/neighbourhood/e1", {"collections": "secret"})
    assert response.status_code == 404 and response.json() == {"error": "not_found"}
    assert client.get("/graph/api/entity/e1/units", {"collections": "secret"}).status_code == 404
    assert graph.params_of(cypher.GRAPH_ENTITY)[0]["collections"] == []


def test_the_search_endpoint(client: Client, graph: FakeDriver) -> None:
    body = client.get("/graph/api/search", {"q": "ali"}).json()
    assert body["results"] == [ALICE] and body["limit"] == 20
    assert client.get("/graph/api/search").json()["results"] == []


def test_someone_elses_answer_is_a_404(outsider: Client, graph: FakeDriver) -> None:
    owner = User.objects.create_user("asker")
    answer = Answer.objects.create(question="Who?", user=owner, sources=[])
    assert outsider.get(f"/graph/api/answer/{answer.id}").status_code == 404
    assert outsider.get(f"/graph/api/answer/{uuid.uuid4()}").status_code == 404
    assert b"No such answer" in outsider.get("/graph/", {"answer": str(answer.id)}).content


def test_the_askers_answer_subgraph(client: Client, graph: FakeDriver) -> None:
    owner = User.objects.create_user("asker")
    answer = Answer.objects.create(question="Who?", user=owner, sources=[])
    client.force_login(owner)
    body = client.get(f"/graph/api/answer/{answer.id}").json()
    assert body["nodes"] == [] and body["answer"]["question"] == "Who?"


def test_the_page_lists_results_and_the_neighbourhood_without_javascript(client: Client, graph: FakeDriver) -> None:
    page = client.get("/graph/", {"q": "ali"}).content.decode()
    assert "3 Chunk" in page and "60 nodes and 150 edges" in page
    assert "?entity=e1" in page
    page = client.get("/graph/", {"entity": "e1"}).content.decode()
    assert 'id="graph-explorer"' in page and "Neighbourhood as a list" in page and "Alice" in page
    assert "vendor/cytoscape/cytoscape.min.js" in page
    assert "No such entity" in client.get("/graph/", {"entity": "e1", "collections": "secret"}).content.decode()
