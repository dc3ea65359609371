"""`manage.py vectors check / --repair / rebuild` against real Neo4j nodes (a collection of this test's own)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from neo4j import Driver
from pytest_django.fixtures import Settings

from apps.graph import cypher
from apps.graph.identity import content_id
from apps.vectors import embedding
from apps.vectors.graph import graph_units
from apps.vectors.ids import vector_id
from apps.vectors.maintenance import vectors_check
from apps.vectors.registry import vector_registry_reset
from apps.vectors.services import vectors_add, vectors_search
from apps.vectors.types import VectorItem
from tests.unit.vectors.fakes import hashing_embed

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

DIM = 32
CHUNKS = ["Ada Lovelace wrote the first algorithm.", "Babbage designed the Analytical Engine.", "London fog."]
ROWS = ["engines / table, row 1: name: Difference Engine.", "engines / table, row 2: name: Analytical Engine."]


def embed(texts: list[str]) -> Any:
    return hashing_embed(texts, DIM)


@pytest.fixture
def vector_settings(tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    settings.VECTORS_DIR = tmp_path / "vectors"
    settings.VECTORS_TEXT_DIM = DIM
    settings.VECTORS_TEXT_MODEL = "hashing-fake"
    settings.VECTORS_TEXT_INDEX = "hnsw"
    monkeypatch.setattr(embedding, "default_text_embed", lambda space="text": embed)
    vector_registry_reset()
    yield
    vector_registry_reset()


def run(driver: Driver, statement: str, **params: Any) -> None:
    driver.execute_query(statement, params, database_=settings.NEO4J_DATABASE)


@pytest.fixture
def collection(neo4j_driver: Driver) -> Iterator[dict[str, Any]]:
    """One document of a fresh collection: 3 chunks, a table of 2 rows, an image with text and one without."""
    name = f"vectors-test-{uuid.uuid4().hex[:12]}"
    doc = content_id("document", name, "sha")
    chunks = [{"id": content_id("chunk", doc, str(i)), "document_id": doc, "text": t} for i, t in enumerate(CHUNKS)]
    table = content_id("table", doc)
    rows = [{"id": content_id("row", doc, str(i)), "table_id": table, "text": t} for i, t in enumerate(ROWS)]
    images = [
        {"id": content_id("image", doc, "cat"), "document_id": doc, "path": "images/ca/cat.png", "text": "tabby cat"},
        {"id": content_id("image", doc, "blank"), "document_id": doc, "path": "images/bl/blank.png", "text": ""},
    ]
    run(neo4j_driver, cypher.DOCUMENTS_CREATE, rows=[{"id": doc, "title": name, "collection": name}])
    run(neo4j_driver, cypher.CHUNKS_CREATE, rows=chunks)
    run(neo4j_driver, cypher.TABLES_CREATE, rows=[{"id": table, "document_id": doc, "name": "engines"}])
    run(neo4j_driver, cypher.ROWS_CREATE, rows=[{**row, "document_id": doc} for row in rows])
    run(neo4j_driver, cypher.IMAGES_CREATE, rows=images)
    yield {"name": name, "document": doc, "chunks": chunks, "rows": rows, "images": images}
    run(neo4j_driver, cypher.DOCUMENT_DELETE, document_id=doc)


def check_json(*args: str) -> tuple[dict[str, Any], bool]:
    out = StringIO()
    try:
        call_command("vectors", "check", "--json", *args, stdout=out)
    except CommandError as error:
        assert error.returncode == 1
        return json.loads(out.getvalue()), False
    return json.loads(out.getvalue()), True


def test_graph_units_are_read_page_by_page(neo4j_driver: Driver, collection: dict[str, Any]) -> None:
    units = list(
        graph_units(driver=neo4j_driver, space="text", with_content=True, collections={collection["name"]}, page=2)
    )
    assert sorted(unit.content for unit in units) == sorted([*CHUNKS, *ROWS, "tabby cat"])
    assert {unit.label for unit in units} == {"Chunk", "Row", "Image"}
    images = list(graph_units(driver=neo4j_driver, space="clip", with_content=True, collections={collection["name"]}))
    assert sorted(unit.content for unit in images) == sorted(
        str(Path(settings.MEDIA_ROOT) / image["path"]) for image in collection["images"]
    )


def test_check_repair_and_rebuild(neo4j_driver: Driver, collection: dict[str, Any], vector_settings: None) -> None:
    name = collection["name"]
    report, ok = check_json("--collection", name)
    assert not ok and report["graph"] == 6 and report["stored"] == 0 and len(report["missing"]) == 6

    report, ok = check_json("--collection", name, "--repair")
    assert ok and report["added"] == 6 and report["removed"] == 0
    assert check_json("--collection", name) == (
        {**report, "missing": [], "added": 0, "stored": 6, "host": 6, "ok": True},
        True,
    )

    ghost = "f" * 32  # a vector whose node is gone, and a chunk deleted from the graph
    vectors_add(space="text", items=[VectorItem(ghost, "Chunk", name)], vectors=embed(["ghost"]))
    deleted = collection["chunks"][2]["id"]
    run(neo4j_driver, "MATCH (c:Chunk {id: $id}) DETACH DELETE c", id=deleted)
    found = vectors_check(driver=neo4j_driver, space="text", collections={name})
    assert (found.graph, found.stored, found.missing) == (5, 7, [])
    assert found.extra == sorted([ghost, deleted])
    assert (found.host, found.host_missing, found.host_extra) == (7, [], [])  # this process's copy follows the store
    report, ok = check_json("--collection", name, "--repair")
    assert report["removed"] == 2 and check_json("--collection", name)[1]

    out = StringIO()
    call_command("vectors", "rebuild", "--space", "text", stdout=out)
    assert "rebuilt text vectors" in out.getvalue()
    assert check_json("--collection", name)[1]
    [matches] = vectors_search(space="text", queries=embed([CHUNKS[0]]), k=3, collections={name})
    assert matches[0].node_id == collection["chunks"][0]["id"] and matches[0].label == "Chunk"
    assert {match.collection for match in matches} == {name}
    [rows] = vectors_search(space="text", queries=embed(["Analytical Engine"]), k=5, collections={name})
    assert {m.node_id for m in rows} >= {collection["rows"][1]["id"], collection["chunks"][1]["id"]}
    assert vector_id(ghost) not in {vector_id(m.node_id) for m in rows}
