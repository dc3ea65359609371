"""The document viewer (/documents/<id>/) against the real Neo4j: a text document opened at a cited
sentence (marked, the passage outlined), a table at its cited row and cell, an image full size with
its labels, a PDF with its pages; a document of a collection the reader may not read is a 404 like a
missing one; the search page's sources link to it."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from neo4j import Driver
from PIL import Image
from pytest_django.fixtures import Settings

from apps.accounts.services import collection_ensure, collection_grant
from apps.documents.links import viewer_url
from apps.ingest.services import default_extractor, upload_ingest
from tests.support import text_pdf

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

NOTES = (
    "Field notes of the moss survey.\n\n"
    "Gwendolyn Pryce counted forty species near Tregaron. "
    "The bog held the rarest of them, a sphagnum found nowhere else."
)
PRICES = "species,site,count\nSphagnum,Tregaron,12\nPolytrichum,Borth,7\nHypnum,Aberystwyth,3\n"
SECRET = "Eluned Morgan kept the vault's herbarium in a cellar."
CITED = "The bog held the rarest of them, a sphagnum found nowhere else."


@pytest.fixture(autouse=True)
def state_dirs(tmp_path: Path, settings: Settings) -> None:
    settings.VECTORS_DIR = tmp_path / "vectors"
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.CLIP_MODEL = settings.VECTORS_CLIP_MODEL = "ragkg-tiny-clip"
    settings.VECTORS_CLIP_DIM = 32


def ingest(driver: Driver, name: str, data: bytes, collection: str) -> str:
    [outcome] = upload_ingest(driver=driver, name=name, data=data, collection=collection, extractor=default_extractor())
    assert outcome.document_id, outcome
    return outcome.document_id


def png() -> bytes:
    data = io.BytesIO()
    Image.new("RGB", (80, 60), "green").save(data, format="PNG")
    return data.getvalue()


@pytest.fixture
def library(empty_graph: Driver) -> dict[str, str]:
    """notes.txt, prices.csv, moss.png and survey.pdf in the public "lab"; plans.txt in the private "vault"."""
    collection_ensure(name="lab", public=True)
    collection_ensure(name="vault")
    return {
        "notes": ingest(empty_graph, "notes.txt", NOTES.encode(), "lab"),
        "prices": ingest(empty_graph, "prices.csv", PRICES.encode(), "lab"),
        "picture": ingest(empty_graph, "moss-picture.png", png(), "lab"),
        "survey": ingest(empty_graph, "survey.pdf", text_pdf(["Mosses of Borth bog", "Mosses of Tregaron bog"]), "lab"),
        "secret": ingest(empty_graph, "plans.txt", SECRET.encode(), "vault"),
    }


def one(driver: Driver, query: str, **params: str) -> dict[str, Any]:
    records, _, _ = driver.execute_query(query, params)
    assert records, query
    return dict(records[0])


def test_a_text_document_opens_at_the_cited_sentence(library: dict[str, str], empty_graph: Driver) -> None:
    chunk = one(
        empty_graph,
        "MATCH (:Document {id: $id})-[:HAS_CHUNK]->(c:Chunk) WHERE c.text CONTAINS 'sphagnum' "
        "RETURN c.id AS id, c.text AS text",
        id=library["notes"],
    )
    start = str(chunk["text"]).index(CITED)
    url = viewer_url(library["notes"], str(chunk["id"]), (start, start + len(CITED)))
    assert url.endswith("#cited") and f"unit={chunk['id']}" in url
    page = Client().get(url.split("#")[0]).content.decode()
    assert f'<mark id="cited">{CITED}</mark>' in page
    assert f'class="passage cited" id="unit-{chunk["id"]}"' in page
    assert "notes.<wbr>txt" in page and "collection lab" in page and "change-log entry" in page
    whole = Client().get(f"/documents/{library['notes']}/", {"unit": chunk["id"]}).content.decode()
    assert '<mark id="cited">' not in whole and 'class="passage cited" id="cited"' in whole, "no sentence: outlined"
    assert "Gwendolyn Pryce counted forty species" in Client().get(f"/documents/{library['notes']}/").content.decode()


def test_a_table_opens_at_the_cited_row_and_cell(library: dict[str, str], empty_graph: Driver) -> None:
    row = one(
        empty_graph,
        "MATCH (:Document {id: $id})-[:HAS_TABLE]->(:Table)-[:HAS_ROW]->(r:Row) WHERE r.text CONTAINS 'Borth' "
        "RETURN r.id AS id, r.text AS text",
        id=library["prices"],
    )
    text = str(row["text"])
    start = text.index("Borth")
    page = (
        Client()
        .get(f"/documents/{library['prices']}/", {"unit": row["id"], "start": start, "end": start + 5})
        .content.decode()
    )
    assert "<h2>Table: " in page and '<th scope="col">species</th>' in page
    cited = re.search(rf'<tr id="unit-{row["id"]}" class="cited">(.*?)</tr>', page, re.S)
    assert cited and '<mark id="cited">Borth</mark>' in cited.group(1) and "Polytrichum" in cited.group(1)
    assert "Sphagnum" in page and "Hypnum" in page


def test_an_image_is_shown_full_size_with_what_was_read_from_it(library: dict[str, str], empty_graph: Driver) -> None:
    image = one(
        empty_graph,
        "MATCH (:Document {id: $id})-[:HAS_IMAGE]->(i:Image) RETURN i.id AS id",
        id=library["picture"],
    )
    page = Client().get(f"/documents/{library['picture']}/", {"unit": image["id"]}).content.decode()
    assert 'class="document-image cited" id="cited"' in page
    assert f'<img src="/media/images/{image["id"]}/full"' in page and "80\u00d760" in page


def test_a_pdf_shows_its_pages(library: dict[str, str], empty_graph: Driver) -> None:
    chunk = one(
        empty_graph,
        "MATCH (:Document {id: $id})-[:HAS_CHUNK]->(c:Chunk) WHERE c.text CONTAINS 'Tregaron' "
        "RETURN c.id AS id, c.text AS text",
        id=library["survey"],
    )
    start = str(chunk["text"]).index("Mosses of Tregaron bog")
    page = (
        Client()
        .get(f"/documents/{library['survey']}/", {"unit": chunk["id"], "start": start, "end": start + 22})
        .content.decode()
    )
    first, second = page.index('id="page-1"'), page.index('id="page-2"')
    assert first < page.index("Mosses of Borth bog") < second < page.index('<mark id="cited">Mosses of Tregaron bog')
    assert f'<img src="/documents/{library["survey"]}/pages/2" alt="Page 2 as printed"' in page
    picture = Client().get(f"/documents/{library['survey']}/pages/2")
    assert picture.status_code == 200 and picture["Content-Type"] == "image/jpeg"
    with Image.open(io.BytesIO(b"".join(picture.streaming_content))) as rendered:  # type: ignore[attr-defined]
        assert abs(rendered.width - 900) <= 1 and rendered.height > rendered.width
    assert Client().get(f"/documents/{library['survey']}/pages/3").status_code == 404
    assert Client().get(f"/documents/{library['notes']}/pages/1").status_code == 404, "no pages: not a PDF"


def test_only_readers_of_the_collection_open_a_document(library: dict[str, str]) -> None:
    secret = f"/documents/{library['secret']}/"
    outsider = Client()
    outsider.force_login(User.objects.create_user("otto"))
    for client in (Client(), outsider):
        refused = client.get(secret)
        missing = client.get("/documents/" + "0" * 64 + "/")
        assert refused.status_code == missing.status_code == 404
        assert "Eluned" not in refused.content.decode() and "plans.txt" not in refused.content.decode()
        assert client.get(f"/documents/{library['survey']}/pages/1").status_code == 200
    User.objects.create_user("vera")
    collection_grant(collection="vault", username="vera")
    member = Client()
    member.force_login(User.objects.get(username="vera"))
    assert "Eluned Morgan kept the vault" in member.get(secret).content.decode()
