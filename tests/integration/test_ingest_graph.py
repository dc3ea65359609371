"""Ingestion into the real Neo4j: structure, identity, replacement, deletion, atomicity."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from neo4j import Driver
from PIL import Image
from pytest_django.fixtures import Settings

from apps.graph import cypher
from apps.ingest.models import Document
from apps.ingest.services import CREATED, FAILED, REPLACED, UNCHANGED, default_extractor, upload_ingest

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

ADA = (
    "Ada Lovelace worked with Charles Babbage in London. "
    "Charles Babbage designed the Analytical Engine. "
    "Lovelace published the first algorithm in 1843."
)
BABBAGE = "Charles Babbage was born in London. He taught at Cambridge University."


@pytest.fixture(autouse=True)
def vectors_dir(tmp_path: Path, settings: Settings) -> Path:
    """Each test starts with empty vector indexes, like its empty graph."""
    settings.VECTORS_DIR = tmp_path / "vectors"
    return Path(settings.VECTORS_DIR)


@pytest.fixture
def media(tmp_path: Path, settings: Settings) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    return Path(settings.MEDIA_ROOT)


def ingest(driver: Driver, name: str, data: bytes, collection: str = "test") -> list[Any]:
    return upload_ingest(driver=driver, name=name, data=data, collection=collection, extractor=default_extractor())


def query(driver: Driver, statement: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = driver.execute_query(statement, params, database_=settings.NEO4J_DATABASE)
    return [record.data() for record in records]


def snapshot(driver: Driver) -> tuple[int, int]:
    nodes = query(driver, "MATCH (n) RETURN count(n) AS n")[0]["n"]
    edges = query(driver, "MATCH ()-[r]->() RETURN count(r) AS n")[0]["n"]
    return nodes, edges


def entity(driver: Driver, name: str) -> dict[str, Any] | None:
    rows = query(driver, "MATCH (e:Entity) WHERE e.name = $name RETURN e {.*} AS e", name=name)
    return rows[0]["e"] if rows else None


def supporters(driver: Driver, name: str) -> set[str]:
    """The documents whose units mention the entity named ``name`` (its support)."""
    rows = query(driver, "MATCH (u)-[:MENTIONS]->(:Entity {name: $name}) RETURN DISTINCT u.document_id AS d", name=name)
    return {row["d"] for row in rows}


def relations_with_evidence(driver: Driver) -> list[dict[str, Any]]:
    """Every relation with its weight and its evidence edges ({document: units})."""
    return [
        row["r"]
        for row in query(
            driver,
            "MATCH (a)-[r:RELATED]->(b) RETURN {weight: r.weight, evidence: COLLECT {"
            " MATCH (a)-[ev:EVIDENCE {predicate: r.predicate}]->(b) RETURN [ev.document, ev.units] }} AS r",
        )
    ]


def test_text_document_becomes_chunks_entities_and_relations(empty_graph: Driver) -> None:
    [outcome] = ingest(empty_graph, "ada.txt", ADA.encode())
    assert outcome.status == CREATED
    assert outcome.counts["chunks"] == 1
    chunk = query(
        empty_graph, "MATCH (:Document {id: $id})-[:HAS_CHUNK]->(c) RETURN c {.*} AS c", id=outcome.document_id
    )[0]["c"]
    assert chunk["text"] == ADA
    sentences = [chunk["text"][s:e] for s, e in zip(chunk["sentence_starts"], chunk["sentence_ends"], strict=True)]
    assert sentences[1] == "Charles Babbage designed the Analytical Engine."
    babbage = entity(empty_graph, "Charles Babbage")
    assert babbage is not None and babbage["type"] == "PERSON"
    assert "documents" not in babbage
    assert supporters(empty_graph, "Charles Babbage") == {outcome.document_id}
    mention = query(
        empty_graph, "MATCH (c:Chunk)-[m:MENTIONS]->(:Entity {name: 'Charles Babbage'}) RETURN m.start AS s, m.end AS e"
    )
    assert {ADA[row["s"] : row["e"]] for row in mention} == {"Charles Babbage"}
    related = query(
        empty_graph, "MATCH (:Entity {name: 'Charles Babbage'})-[r:RELATED]-(o) RETURN o.name AS o, r {.*} AS r"
    )
    assert {row["o"] for row in related} >= {"London"}
    assert all(set(row["r"]) == {"predicate", "weight"} and row["r"]["weight"] == 1 for row in related)
    evidence = query(
        empty_graph,
        "MATCH (:Entity {name: 'Charles Babbage'})-[ev:EVIDENCE]-() RETURN ev {.*} AS ev",
    )
    assert len(evidence) == len(related)
    assert all(
        row["ev"]["units"] == [chunk["id"]]
        and row["ev"]["document"] == outcome.document_id
        and row["ev"]["collection"] == chunk["collection"]
        for row in evidence
    )


def test_same_bytes_again_is_a_no_op(empty_graph: Driver) -> None:
    ingest(empty_graph, "ada.txt", ADA.encode())
    before = snapshot(empty_graph)
    [again] = ingest(empty_graph, "copy-of-ada.txt", ADA.encode())
    assert again.status == UNCHANGED
    assert snapshot(empty_graph) == before


def test_changed_file_under_the_same_path_replaces_the_old_version(empty_graph: Driver) -> None:
    [first] = ingest(empty_graph, "notes.txt", ADA.encode())
    [second] = ingest(empty_graph, "notes.txt", BABBAGE.encode())
    assert second.status == REPLACED
    ids = {row["id"] for row in query(empty_graph, "MATCH (d:Document) RETURN d.id AS id")}
    assert ids == {second.document_id}
    assert entity(empty_graph, "Ada Lovelace") is None
    assert list(Document.objects.values_list("id", flat=True)) == [second.document_id]
    assert first.document_id != second.document_id


def test_delete_removes_exactly_what_only_that_document_supported(empty_graph: Driver) -> None:
    from apps.ingest.services import document_delete

    [ada] = ingest(empty_graph, "ada.txt", ADA.encode())
    [babbage] = ingest(empty_graph, "babbage.txt", BABBAGE.encode())
    shared = entity(empty_graph, "Charles Babbage")
    assert shared is not None
    assert supporters(empty_graph, "Charles Babbage") == {ada.document_id, babbage.document_id}
    supported = {d for relation in relations_with_evidence(empty_graph) for d, _ in relation["evidence"]}
    assert supported == {ada.document_id, babbage.document_id}

    assert document_delete(driver=empty_graph, document_id=ada.document_id)

    assert entity(empty_graph, "Ada Lovelace") is None  # only ada.txt mentioned her
    assert entity(empty_graph, "Analytical Engine") is None
    kept = entity(empty_graph, "Charles Babbage")
    assert kept is not None and supporters(empty_graph, "Charles Babbage") == {babbage.document_id}
    london = entity(empty_graph, "London")
    assert london is not None and supporters(empty_graph, "London") == {babbage.document_id}
    relations = relations_with_evidence(empty_graph)
    assert relations and all([d for d, _ in r["evidence"]] == [babbage.document_id] for r in relations)
    assert all(r["weight"] == sum(len(units) for _, units in r["evidence"]) for r in relations)
    assert (
        query(empty_graph, "MATCH ()-[ev:EVIDENCE {document: $id}]->() RETURN count(ev) AS n", id=ada.document_id)[0][
            "n"
        ]
        == 0
    )
    leftovers = query(empty_graph, "MATCH (n) WHERE n.document_id = $id RETURN count(n) AS n", id=ada.document_id)
    assert leftovers[0]["n"] == 0
    assert not Document.objects.filter(id=ada.document_id).exists()
    # and babbage.txt is whole
    assert (
        query(
            empty_graph, "MATCH (:Document {id: $id})-[:HAS_CHUNK]->(c) RETURN count(c) AS n", id=babbage.document_id
        )[0]["n"]
        == 1
    )


def test_table_rows_are_nodes_with_cells_and_text(empty_graph: Driver) -> None:
    data = b"name,city,year\nAda Lovelace,London,1843\nAlan Turing,Manchester,1950\n"
    [outcome] = ingest(empty_graph, "people.csv", data)
    assert outcome.status == CREATED and outcome.counts["rows"] == 2
    rows = query(
        empty_graph,
        "MATCH (:Document {id: $id})-[:HAS_TABLE]->(t)-[:HAS_ROW]->(r) "
        "RETURN t.columns AS cols, r {.*} AS r ORDER BY r.idx",
        id=outcome.document_id,
    )
    assert rows[0]["cols"] == ["name", "city", "year"]
    assert rows[1]["r"]["cells"] == ["Alan Turing", "Manchester", "1950"]
    assert "city: Manchester" in rows[1]["r"]["text"]
    turing = query(empty_graph, "MATCH (:Row)-[:MENTIONS]->(e:Entity) RETURN collect(e.name) AS names")[0]["names"]
    assert "Alan Turing" in turing


def test_image_node_with_thumbnail(empty_graph: Driver, media: Path) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (640, 480), (200, 30, 30)).save(buffer, format="PNG")
    [outcome] = ingest(empty_graph, "red.png", buffer.getvalue())
    assert outcome.status == CREATED and outcome.counts["images"] == 1
    image = query(
        empty_graph, "MATCH (:Document {id: $id})-[:HAS_IMAGE]->(i) RETURN i {.*} AS i", id=outcome.document_id
    )[0]["i"]
    assert (image["width"], image["height"], image["format"]) == (640, 480, "PNG")
    with Image.open(media / image["thumbnail"]) as thumb:
        assert max(thumb.size) == 256
    assert (media / image["path"]).read_bytes() == buffer.getvalue()


def test_a_failure_mid_write_leaves_no_partial_document(empty_graph: Driver, monkeypatch: pytest.MonkeyPatch) -> None:
    ingest(empty_graph, "babbage.txt", BABBAGE.encode(), collection="other")
    before = snapshot(empty_graph)
    # The last statement of a document's write fails, as a crash mid-write would.
    monkeypatch.setattr(cypher, "RELATIONS_MERGE", "THIS IS NOT CYPHER")
    [outcome] = ingest(empty_graph, "ada.txt", ADA.encode())
    assert (outcome.status, outcome.error_code) == (FAILED, "graph_write_failed")
    assert "Invalid input" in (outcome.error or "")
    assert snapshot(empty_graph) == before
    assert not Document.objects.filter(path="ada.txt").exists()


@pytest.mark.parametrize(
    ("name", "data", "code"),
    [
        ("notes.exe", b"MZ\x90\x00", "unsupported_type"),
        ("empty.txt", b"", "empty_file"),
        ("broken.pdf", b"%PDF-1.4\n this is not a pdf", "corrupt_file"),
        ("broken.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "corrupt_file"),
        ("ragged.csv", b"a,b,c\n1,2,3\n4,5\n", "ragged_table"),
        ("blob.txt", bytes(range(256)) * 8, "undecodable_text"),
        ("mislabelled.xlsx", b"PK\x03\x04 not really a workbook", "corrupt_file"),
    ],
)
def test_bad_input_fails_clearly_and_leaves_the_graph_intact(
    empty_graph: Driver, name: str, data: bytes, code: str
) -> None:
    ingest(empty_graph, "babbage.txt", BABBAGE.encode())
    before = snapshot(empty_graph)
    [outcome] = ingest(empty_graph, name, data)
    assert outcome.status == FAILED
    assert outcome.error_code == code
    assert outcome.error
    assert snapshot(empty_graph) == before


def zip_of(members: dict[str, bytes]) -> bytes:
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member, content in members.items():
            archive.writestr(member, content)
    return buffer.getvalue()


def png_of(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("L", (width, height)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("name", "make_data", "code"),
    [
        ("big.txt", lambda: b"word " * 1000, "too_large"),
        ("huge.png", lambda: png_of(1000, 1000), "image_too_many_pixels"),
        ("slip.zip", lambda: zip_of({"ok.txt": b"fine", "../../etc/evil.txt": b"evil"}), "unsafe_archive_path"),
        ("many.zip", lambda: zip_of({f"f{n}.txt": b"Alan Turing" for n in range(30)}), "too_many_members"),
    ],
)
def test_limits_are_enforced_and_nothing_is_written(
    empty_graph: Driver, settings: Settings, name: str, make_data: Any, code: str
) -> None:
    settings.INGEST_MAX_FILE_BYTES = 4000
    settings.INGEST_MAX_IMAGE_PIXELS = 500_000
    settings.INGEST_MAX_ZIP_MEMBERS = 20
    ingest(empty_graph, "babbage.txt", BABBAGE.encode())
    before = snapshot(empty_graph)
    [outcome] = ingest(empty_graph, name, make_data())
    assert (outcome.status, outcome.error_code) == (FAILED, code)
    assert snapshot(empty_graph) == before


def test_zip_members_keep_their_paths(empty_graph: Driver) -> None:
    outcomes = ingest(
        empty_graph, "bundle.zip", zip_of({"docs/ada.txt": ADA.encode(), "data/people.csv": b"name\nAlan Turing\n"})
    )
    assert sorted((o.path, o.status) for o in outcomes) == [("data/people.csv", CREATED), ("docs/ada.txt", CREATED)]
    paths = {row["p"] for row in query(empty_graph, "MATCH (d:Document) RETURN d.path AS p")}
    assert paths == {"docs/ada.txt", "data/people.csv"}


def test_one_document_failing_in_a_batch_fails_alone(empty_graph: Driver, monkeypatch: pytest.MonkeyPatch) -> None:
    import neo4j.exceptions

    from apps.graph import writer
    from apps.ingest import services

    real_write = writer.documents_graph_write

    def refuse_poison(*, driver: Driver, graphs: Any, replaces: Any = ()) -> list[str]:
        if any(graph.document["path"] == "poison.txt" for graph in graphs):
            raise neo4j.exceptions.ClientError("refused for the test")
        return real_write(driver=driver, graphs=graphs, replaces=replaces)

    monkeypatch.setattr(services, "documents_graph_write", refuse_poison)
    uploads = [
        ("ada.txt", ADA.encode()),
        ("poison.txt", b"Grace Hopper wrote COBOL."),
        ("babbage.txt", BABBAGE.encode()),
    ]
    outcomes = services.uploads_ingest(
        driver=empty_graph, uploads=uploads, collection="test", extractor=default_extractor()
    )
    assert [(o.path, o.status) for o in outcomes] == [
        ("ada.txt", CREATED),
        ("poison.txt", FAILED),
        ("babbage.txt", CREATED),
    ]
    assert outcomes[1].error_code == "graph_write_failed"
    paths = {row["p"] for row in query(empty_graph, "MATCH (d:Document) RETURN d.path AS p")}
    assert paths == {"ada.txt", "babbage.txt"}
    assert entity(empty_graph, "Grace Hopper") is None
    assert set(Document.objects.values_list("path", flat=True)) == {"ada.txt", "babbage.txt"}


def test_two_versions_of_a_path_in_one_call_keep_the_later(empty_graph: Driver) -> None:
    from apps.ingest.services import uploads_ingest

    uploads = [("notes.txt", ADA.encode()), ("notes.txt", BABBAGE.encode())]
    outcomes = uploads_ingest(driver=empty_graph, uploads=uploads, collection="test", extractor=default_extractor())
    assert [o.status for o in outcomes] == [CREATED, REPLACED]
    paths = query(empty_graph, "MATCH (d:Document) RETURN d.id AS id")
    assert [row["id"] for row in paths] == [outcomes[1].document_id]
    assert list(Document.objects.values_list("id", flat=True)) == [outcomes[1].document_id]


def test_pipelined_batches_see_the_batch_written_before_them(empty_graph: Driver) -> None:
    """Batch k+1 is analysed while batch k is written: a repeat of either's content or path still resolves."""
    from apps.ingest.services import uploads_ingest

    uploads = [
        ("a.txt", ADA.encode()),
        ("b.txt", BABBAGE.encode()),
        ("copy-of-b.txt", BABBAGE.encode()),
        ("a.txt", (ADA + " She died in 1852.").encode()),
    ]
    outcomes = uploads_ingest(
        driver=empty_graph, uploads=uploads, collection="test", extractor=default_extractor(), batch_size=1
    )
    assert [(o.path, o.status) for o in outcomes] == [
        ("a.txt", CREATED),
        ("b.txt", CREATED),
        ("copy-of-b.txt", UNCHANGED),
        ("a.txt", REPLACED),
    ]
    assert outcomes[2].document_id == outcomes[1].document_id
    ids = {row["id"] for row in query(empty_graph, "MATCH (d:Document) RETURN d.id AS id")}
    assert ids == {outcomes[1].document_id, outcomes[3].document_id}
    assert set(Document.objects.values_list("id", flat=True)) == ids


def test_the_next_batch_embeds_while_the_graph_write_of_the_one_before_runs(
    empty_graph: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The encoder does not wait for Neo4j: batch k+1 is embedded during batch k's graph write, and the
    outcomes still come out in order with every document recorded and searchable."""
    import threading
    import time

    from apps.graph import writer
    from apps.ingest import enrich, services

    real_write, real_embed = writer.documents_graph_write, enrich.units_embed
    events: list[tuple[str, str, float]] = []

    def slow_write(**kwargs: Any) -> list[str]:
        events.append(("write", threading.current_thread().name, time.perf_counter()))
        time.sleep(0.4)
        result = real_write(**kwargs)
        events.append(("written", threading.current_thread().name, time.perf_counter()))
        return result

    def embed(**kwargs: Any) -> Any:
        events.append(("embed", threading.current_thread().name, time.perf_counter()))
        return real_embed(**kwargs)

    monkeypatch.setattr(services, "documents_graph_write", slow_write)
    monkeypatch.setattr(services, "units_embed", embed)
    uploads = [("a.txt", ADA.encode()), ("b.txt", BABBAGE.encode()), ("c.txt", b"Grace Hopper wrote COBOL.")]
    outcomes = services.uploads_ingest(
        driver=empty_graph, uploads=uploads, collection="test", extractor=default_extractor(), batch_size=1
    )
    assert [(o.path, o.status) for o in outcomes] == [("a.txt", CREATED), ("b.txt", CREATED), ("c.txt", CREATED)]
    writes = [(at, name) for kind, name, at in events if kind == "write"]
    written = [at for kind, _, at in events if kind == "written"]
    embeds = [at for kind, _, at in events if kind == "embed"]
    assert all(name.startswith("ingest-graph-write") for _, name in writes)
    assert writes[0][0] < embeds[1] < written[0]  # batch 2 embedded during batch 1's write
    assert set(Document.objects.values_list("path", flat=True)) == {"a.txt", "b.txt", "c.txt"}
    from apps.vectors.registry import vector_registry

    [chunks] = query(empty_graph, "MATCH (c:Chunk) RETURN count(c) AS n")
    assert vector_registry().get("text").count == chunks["n"] >= 3


def test_neo4j_lost_between_batches_leaves_the_extractor_free(
    empty_graph: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batch 2's extraction is running when batch 1's write finds Neo4j gone: the error reaches the
    caller (a job retries it) and the extractor is free for that retry, instead of waiting forever."""
    import neo4j.exceptions

    from apps.ingest import services
    from apps.ingest.extraction_pool import ExtractorPool

    def gone(**_: Any) -> list[str]:
        raise neo4j.exceptions.ServiceUnavailable("Neo4j went away for the test")

    monkeypatch.setattr(services, "documents_graph_write", gone)
    pool = ExtractorPool(processes=1)
    try:
        uploads = [("a.txt", ADA.encode()), ("b.txt", BABBAGE.encode()), ("c.txt", b"Grace Hopper wrote COBOL.")]
        with pytest.raises(neo4j.exceptions.ServiceUnavailable):
            services.uploads_ingest(
                driver=empty_graph, uploads=uploads, collection="test", extractor=pool, batch_size=1
            )
        assert not pool._busy.locked(), "an extraction was left uncollected"
        monkeypatch.undo()
        outcomes = services.uploads_ingest(driver=empty_graph, uploads=uploads, collection="test", extractor=pool)
        assert [o.status for o in outcomes] == [CREATED, CREATED, CREATED]
    finally:
        pool.close()


def nearest(query: str, k: int = 3) -> list[str]:
    from apps.models.registry import text_embedder
    from apps.vectors.services import vectors_search

    [hits] = vectors_search(space="text", queries=text_embedder().embed_queries([query]), k=k)
    return [hit.node_id for hit in hits]


def unit_ids(driver: Driver, document_id: str) -> set[str]:
    rows = query(
        driver,
        "MATCH (:Document {id: $id})-[:HAS_CHUNK|HAS_IMAGE|HAS_TABLE|HAS_ROW*1..2]->(u) "
        "WHERE u:Chunk OR u:Row OR u:Image RETURN u.id AS id",
        id=document_id,
    )
    return {row["id"] for row in rows}


def test_units_get_vectors_that_follow_replacement_and_deletion(empty_graph: Driver) -> None:
    from apps.ingest.services import document_delete

    [ada] = ingest(empty_graph, "ada.txt", ADA.encode())
    [table] = ingest(empty_graph, "planets.csv", b"planet,moons\nMars,2\nJupiter,95\n")
    [ada_chunk] = unit_ids(empty_graph, ada.document_id)
    assert nearest("Who worked with Babbage in London?")[0] == ada_chunk
    jupiter = query(empty_graph, "MATCH (r:Row) WHERE r.cells[0] = 'Jupiter' RETURN r.id AS id")[0]["id"]
    assert nearest("How many moons does Jupiter have?")[0] == jupiter

    [new] = ingest(empty_graph, "ada.txt", BABBAGE.encode())
    assert new.status == REPLACED
    [new_chunk] = unit_ids(empty_graph, new.document_id)
    found = nearest("Where was Charles Babbage born?", k=10)
    assert found[0] == new_chunk
    assert ada_chunk not in found

    assert document_delete(driver=empty_graph, document_id=table.document_id)
    assert set(nearest("How many moons does Jupiter have?", k=10)) == {new_chunk}


def test_an_image_is_described_and_found_by_its_text(empty_graph: Driver, media: Path) -> None:
    from PIL import ImageDraw, ImageFont

    image = Image.new("RGB", (640, 160), "white")
    ImageDraw.Draw(image).text((20, 40), "QUARTERLY REPORT", fill="black", font=ImageFont.load_default(size=48))
    data = io.BytesIO()
    image.save(data, format="PNG")
    [outcome] = ingest(empty_graph, "scan.png", data.getvalue())
    node = query(
        empty_graph,
        "MATCH (:Document {id: $id})-[:HAS_IMAGE]->(i) RETURN i {.*} AS i",
        id=outcome.document_id,
    )[0]["i"]
    assert "QUARTERLY" in node["ocr_text"].upper()
    assert len(node["labels"]) == len(node["label_scores"]) == 5
    assert node["text"].startswith("Image of ")
    assert nearest("quarterly report")[0] == node["id"]


def test_with_a_clip_model_images_also_get_clip_vectors(empty_graph: Driver, media: Path, settings: Settings) -> None:
    """The CLIP path end to end with the tiny random open_clip model (wiring only: its vectors mean nothing)."""
    from apps.ingest.services import document_delete
    from apps.models.registry import clip_embedder
    from apps.vectors.services import vectors_search

    settings.CLIP_MODEL = settings.VECTORS_CLIP_MODEL = "ragkg-tiny-clip"
    settings.VECTORS_CLIP_DIM = 32
    image = io.BytesIO()
    Image.new("RGB", (64, 48), "orange").save(image, format="PNG")
    [outcome] = ingest(empty_graph, "orange.png", image.getvalue())
    [image_id] = unit_ids(empty_graph, outcome.document_id)
    clip = clip_embedder()
    assert clip is not None
    [hits] = vectors_search(space="clip", queries=clip.embed_texts(["an orange square"]), k=5)
    assert [(hit.node_id, hit.label) for hit in hits] == [(image_id, "Image")]
    assert document_delete(driver=empty_graph, document_id=outcome.document_id)
    [hits] = vectors_search(space="clip", queries=clip.embed_texts(["an orange square"]), k=5)
    assert hits == []


def _title_linkers(driver: Driver, name: str) -> set[str]:
    rows = query(
        driver,
        "MATCH (c:Chunk)-[m:MENTIONS]->(e:Entity {type: 'TITLE', name: $name})"
        " RETURN c.document_id AS d, m.linked AS l",
        name=name,
    )
    return {row["d"] for row in rows if row["l"]}


def test_passages_that_name_a_title_mention_its_entity_whichever_comes_first(empty_graph: Driver) -> None:
    from apps.ingest.services import document_delete

    [before] = ingest(empty_graph, "fuller.txt", b"Drew Fuller\n\nDrew Fuller starred in Charmed for two seasons.")
    [page] = ingest(empty_graph, "charmed.txt", b"Charmed\n\nCharmed is a television series about three sisters.")
    [after] = ingest(empty_graph, "combs.txt", b"Holly Marie Combs\n\nCombs also starred in Charmed, as Piper.")
    # spaCy may also tag "Charmed" (as a place, say): that is its own entity; the title entity is the TITLE one
    [title] = [
        row["e"] for row in query(empty_graph, "MATCH (e:Entity {type: 'TITLE', name: 'Charmed'}) RETURN e {.*} AS e")
    ]
    assert _title_linkers(empty_graph, "Charmed") == {before.document_id, after.document_id}
    assert title["name"] == "Charmed"
    assert supporters(empty_graph, "Charmed") >= {before.document_id, page.document_id, after.document_id}

    assert document_delete(driver=empty_graph, document_id=before.document_id)
    assert _title_linkers(empty_graph, "Charmed") == {after.document_id}
    assert document_delete(driver=empty_graph, document_id=after.document_id)
    assert document_delete(driver=empty_graph, document_id=page.document_id)
    assert entity(empty_graph, "Charmed") is None  # nothing names it any more


def _synonyms(driver: Driver) -> dict[frozenset[str], tuple[float, str]]:
    """Synonym edges by the pair of names (a leading "the" dropped), with score and status."""
    rows = query(
        driver,
        "MATCH (a:Entity)-[s:SYNONYM]->(b:Entity)"
        " RETURN a.name AS a, b.name AS b, s.score AS score, s.status AS status",
    )
    return {
        frozenset(name.removeprefix("the ") for name in (row["a"], row["b"])): (row["score"], row["status"])
        for row in rows
    }


def test_entities_whose_names_embed_close_get_a_scored_synonym_suggestion(empty_graph: Driver) -> None:
    from apps.ingest.services import document_delete

    cambridge = frozenset({"Cambridge University", "University of Cambridge"})
    [first] = ingest(empty_graph, "a.txt", b"Alan Turing studied at Cambridge University in England.")
    [second] = ingest(empty_graph, "b.txt", b"Maurice Wilkes built EDSAC at the University of Cambridge in 1949.")
    assert query(empty_graph, "MATCH (e:Entity) WHERE e.name_vector IS NULL RETURN e.name AS name") == []
    edges = _synonyms(empty_graph)
    score, status = edges[cambridge]
    assert score >= 0.9 and status == "suggested"
    assert frozenset({"Alan Turing", "Maurice Wilkes"}) not in edges  # two people are not one
    assert document_delete(driver=empty_graph, document_id=second.document_id)
    assert cambridge not in _synonyms(empty_graph)  # the edge went with the entity only that document named
    assert document_delete(driver=empty_graph, document_id=first.document_id)
    assert _synonyms(empty_graph) == {}


def test_a_graph_written_without_name_vectors_gets_them_and_its_synonym_edges_from_the_backfill(
    empty_graph: Driver, settings: Settings
) -> None:
    from django.core.management import call_command

    settings.GRAPH_SYNONYM_K = 0  # as a graph written before names had vectors
    ingest(empty_graph, "a.txt", b"Alan Turing studied at Cambridge University in England.")
    ingest(empty_graph, "b.txt", b"Maurice Wilkes built EDSAC at the University of Cambridge in 1949.")
    assert query(empty_graph, "MATCH (e:Entity) WHERE e.name_vector IS NOT NULL RETURN e.id AS id") == []
    assert _synonyms(empty_graph) == {}
    settings.GRAPH_SYNONYM_K = 5
    out = io.StringIO()
    call_command("synonyms_backfill", "--batch", "2", stdout=out)  # several rounds
    assert query(empty_graph, "MATCH (e:Entity) WHERE e.name_vector IS NULL RETURN e.id AS id") == []
    assert frozenset({"Cambridge University", "University of Cambridge"}) in _synonyms(empty_graph)
    assert "synonym edges suggested" in out.getvalue()
