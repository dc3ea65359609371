"""The graph explorer's JSON endpoints against the real Neo4j: a reader sees the entities, edges, units and
counts of the collections they may read and nothing of the others (an entity only a private document
mentions is a 404, like a missing one; a relation only a private document states is not drawn, even between
entities the reader sees); the collection, type and relation filters and the caps apply in the queries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from neo4j import Driver
from pytest_django.fixtures import Settings

from apps.accounts.services import collection_ensure, collection_grant
from apps.graph import explore
from apps.ingest.services import default_extractor, upload_ingest

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

ADA = (
    "Ada Lovelace worked with Charles Babbage in London. "
    "Charles Babbage designed the Analytical Engine. "
    "Lovelace published the first algorithm in 1843."
)
BABBAGE = "Charles Babbage was born in London. He taught at Cambridge University."
SECRET = "Charles Babbage met Grace Hopper at Harvard University. Grace Hopper wrote the first compiler."
PRIVATE_TRACES = ("Grace Hopper", "Harvard", "plans.txt", "compiler", "vault")


@pytest.fixture(autouse=True)
def vectors_dir(tmp_path: Path, settings: Settings) -> Path:
    settings.VECTORS_DIR = tmp_path / "vectors"
    return Path(settings.VECTORS_DIR)


def ingest(driver: Driver, name: str, text: str, collection: str) -> str:
    [outcome] = upload_ingest(
        driver=driver, name=name, data=text.encode(), collection=collection, extractor=default_extractor()
    )
    assert outcome.document_id, outcome
    return outcome.document_id


def entity_ids(driver: Driver) -> dict[str, str]:
    records, _, _ = driver.execute_query("MATCH (e:Entity) RETURN e.name AS name, e.id AS id")
    return {record["name"]: record["id"] for record in records}


@pytest.fixture
def names(empty_graph: Driver) -> dict[str, str]:
    """ada.txt and babbage.txt in the public "lab", plans.txt in the private "vault"; entity name -> id."""
    collection_ensure(name="lab", public=True)
    collection_ensure(name="vault")
    ingest(empty_graph, "ada.txt", ADA, "lab")
    ingest(empty_graph, "babbage.txt", BABBAGE, "lab")
    ingest(empty_graph, "plans.txt", SECRET, "vault")
    ids = entity_ids(empty_graph)
    assert {"Charles Babbage", "Grace Hopper"} <= set(ids), ids
    return ids


@pytest.fixture
def member(db: None) -> Client:
    User.objects.create_user("vera")
    collection_grant(collection="vault", username="vera")
    browser = Client()
    browser.force_login(User.objects.get(username="vera"))
    return browser


def json_of(client: Client, url: str, **params: Any) -> tuple[int, dict[str, Any], str]:
    response = client.get(url, params)
    return response.status_code, response.json(), response.content.decode()


def node_names(graph: dict[str, Any]) -> set[str]:
    return {node["name"] for node in graph["nodes"]}


@pytest.mark.parametrize("persona", ["visitor", "outsider"])
def test_an_ungranted_reader_sees_nothing_of_the_private_collection(
    persona: str, names: dict[str, str], client: Client
) -> None:
    if persona == "outsider":
        client.force_login(User.objects.create_user("otto"))
    babbage, hopper = names["Charles Babbage"], names["Grace Hopper"]
    bodies = []
    status, found, body = json_of(client, "/graph/api/search", q="babbage")
    bodies.append(body)
    assert status == 200 and [r["id"] for r in found["results"]] == [babbage]
    lab_mentions = found["results"][0]["mentions"]
    status, graph, body = json_of(client, f"/graph/api/neighbourhood/{babbage}")
    bodies.append(body)
    assert status == 200 and graph["nodes"][0]["mentions"] == lab_mentions
    assert "Ada Lovelace" in node_names(graph) and hopper not in {n["id"] for n in graph["nodes"]}
    assert all(e["documents"] >= 1 for e in graph["edges"] if e["type"] == "RELATED")
    status, units, body = json_of(client, f"/graph/api/entity/{babbage}/units")
    bodies.append(body)
    assert status == 200 and {u["document"]["collection"] for u in units["units"]} == {"lab"}
    assert units["total"] == lab_mentions
    for url in (f"/graph/api/neighbourhood/{hopper}", f"/graph/api/entity/{hopper}/units"):
        status, missing, body = json_of(client, url)
        assert status == 404 and missing == {"error": "not_found"}
    status, found, body = json_of(client, "/graph/api/search", q="grace")
    assert found["results"] == []
    bodies.append(client.get("/graph/", {"entity": babbage}).content.decode())
    bodies.append(client.get("/graph/", {"q": "a"}).content.decode())
    for text in bodies:
        assert not [trace for trace in PRIVATE_TRACES if trace.lower() in text.lower()]


def test_a_member_sees_the_private_collection_and_can_filter_it_out(names: dict[str, str], member: Client) -> None:
    babbage, hopper = names["Charles Babbage"], names["Grace Hopper"]
    status, graph, _ = json_of(member, f"/graph/api/neighbourhood/{babbage}")
    assert status == 200 and hopper in {n["id"] for n in graph["nodes"]}
    status, units, _ = json_of(member, f"/graph/api/entity/{babbage}/units")
    assert {u["document"]["collection"] for u in units["units"]} == {"lab", "vault"}
    status, narrowed, body = json_of(member, f"/graph/api/neighbourhood/{babbage}", collections="lab")
    assert hopper not in {n["id"] for n in narrowed["nodes"]} and "Grace Hopper" not in body
    assert json_of(member, f"/graph/api/neighbourhood/{hopper}", collections="lab")[0] == 404
    assert json_of(member, f"/graph/api/neighbourhood/{hopper}")[0] == 200


def test_type_and_relation_filters_and_the_caps_apply_in_the_query(
    names: dict[str, str], member: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    babbage = names["Charles Babbage"]
    _, whole, _ = json_of(member, f"/graph/api/neighbourhood/{babbage}")
    types = {n["type"] for n in whole["nodes"][1:]}
    assert len(types) >= 2, whole["nodes"]
    kept = sorted(types)[0]
    _, typed, _ = json_of(member, f"/graph/api/neighbourhood/{babbage}", types=kept)
    assert {n["type"] for n in typed["nodes"][1:]} == {kept}
    kind = whole["edges"][0]["kind"]
    _, kinds, _ = json_of(member, f"/graph/api/neighbourhood/{babbage}", relations=kind)
    assert kinds["edges"] and {e["kind"] for e in kinds["edges"]} == {kind}
    monkeypatch.setattr(explore, "NODE_CAP", 3)
    monkeypatch.setattr(explore, "EDGE_CAP", 2)
    _, capped, _ = json_of(member, f"/graph/api/neighbourhood/{babbage}")
    assert len(capped["nodes"]) <= 3 and len(capped["edges"]) <= 2
    assert capped["caps"] == {"nodes": 3, "edges": 2} and capped["truncated"]
    assert capped["neighbours"]["total"] == len(whole["nodes"]) - 1
