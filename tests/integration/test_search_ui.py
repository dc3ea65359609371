"""The search UI against the real Neo4j, FAISS indexes, models and Redis: the answer streamed as
Server-Sent Events, image search over the CLIP space limited to readable collections, and the
image files refused to outsiders."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.test import Client
from neo4j import Driver
from PIL import Image
from pytest_django.fixtures import Settings

from apps.accounts.services import collection_ensure
from apps.answers.images import images_search
from apps.answers.models import Answer
from apps.answers.scope import answer_scope
from apps.answers.tools import default_tools
from tests.integration.test_answers import DISTRACTORS, JOURNAL, QUESTION, SOCIETY, ingest, stand_in_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def state_dirs(tmp_path: Path, settings: Settings) -> None:
    settings.VECTORS_DIR = tmp_path / "vectors"
    settings.MEDIA_ROOT = tmp_path / "media"


def sse(body: bytes) -> list[tuple[str, dict[str, object]]]:
    events = []
    for block in body.decode().split("\n\n"):
        if block.strip():
            name, data = block.split("\n")
            events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return events


def test_the_answer_streams_its_tokens_then_done(empty_graph: Driver, settings: Settings) -> None:
    ingest(empty_graph, {"journal.txt": JOURNAL, "society.txt": SOCIETY, **DISTRACTORS}, "moss")
    collection_ensure(name="moss", public=True)
    client = Client()
    with stand_in_worker(settings):
        fragment = client.post("/", {"question": QUESTION, "collection": "moss"}, HTTP_HX_REQUEST="true")
        answer = Answer.objects.get()
        html = fragment.content.decode()
        assert f'data-stream-url="/ask/{answer.id}/stream"' in html and "society.txt" in html
        response = client.get(f"/ask/{answer.id}/stream")
        assert response["Content-Type"] == "text/event-stream"
        events = sse(b"".join(response.streaming_content))  # type: ignore[attr-defined]
    names = [name for name, _ in events]
    assert names[-1] == "done" and names.count("token") >= 2 and set(names) == {"token", "generated", "done"}
    assert names.index("generated") == len(names) - 2, "the final text, then (after attribution) done"
    answer.refresh_from_db()
    assert answer.state == Answer.DONE
    assert "".join(str(data["text"]) for name, data in events if name == "token").strip() == answer.generated
    assert dict(events)["generated"] == {"text": answer.generated, "not_found": False}
    final = client.get(f"/ask/{answer.id}/", HTTP_HX_REQUEST="true").content.decode()
    for citation in answer.citations:
        assert f'<a class="cite" href="#source-{citation["sources"][0]}">' in final
    assert "<mark>" in final and "tokens traced to their sources" in final
    assert Client().get(f"/ask/{answer.id}/stream").status_code == 404, "another browser session"


def png(colour: str) -> bytes:
    data = io.BytesIO()
    Image.new("RGB", (64, 48), colour).save(data, format="PNG")
    return data.getvalue()


def image_ids(driver: Driver, collection: str) -> list[str]:
    records, _, _ = driver.execute_query(
        "MATCH (d:Document {collection: $c})-[:HAS_IMAGE]->(i:Image) RETURN i.id AS id", c=collection
    )
    return [record["id"] for record in records]


@pytest.fixture
def pictures(empty_graph: Driver, settings: Settings) -> dict[str, list[str]]:
    """Images in a public collection and in a private one, with the tiny CLIP model (wiring only)."""
    settings.CLIP_MODEL = settings.VECTORS_CLIP_MODEL = "ragkg-tiny-clip"
    settings.VECTORS_CLIP_DIM = 32
    owner = User.objects.create_user("owner")
    collection_ensure(name="pics-open", public=True)
    collection_ensure(name="pics-closed", owner=owner)
    for collection, colours in {"pics-open": ("orange", "blue"), "pics-closed": ("red", "green")}.items():
        for colour in colours:
            ingest_image(empty_graph, f"{colour}.png", png(colour), collection)
    return {name: image_ids(empty_graph, name) for name in ("pics-open", "pics-closed")}


def ingest_image(driver: Driver, name: str, data: bytes, collection: str) -> None:
    from apps.ingest.services import default_extractor, upload_ingest

    [outcome] = upload_ingest(driver=driver, name=name, data=data, collection=collection, extractor=default_extractor())
    assert outcome.counts["images"] == 1


def test_image_search_ranks_only_readable_images_in_the_clip_space(pictures: dict[str, list[str]]) -> None:
    tools = default_tools()
    assert tools.clip is not None
    search = {
        "query": "an orange square",
        "k": 10,
        "driver": tools.driver,
        "text": tools.text,
        "clip": tools.clip,
        "search": tools.search,
    }
    visitor = images_search(collections=answer_scope(user=AnonymousUser(), requested=None), **search)  # type: ignore[arg-type]
    assert visitor.space == "clip"
    assert sorted(hit.node_id for hit in visitor.hits) == sorted(pictures["pics-open"])
    assert {hit.collection for hit in visitor.hits} == {"pics-open"}
    owner = images_search(
        collections=answer_scope(user=User.objects.get(username="owner"), requested=None),
        **search,  # type: ignore[arg-type]
    )
    assert sorted(hit.node_id for hit in owner.hits) == sorted(pictures["pics-open"] + pictures["pics-closed"])
    page = Client().post("/", {"question": "an orange square", "images": "on"}).content.decode()
    assert all(f"/media/images/{node}/thumb" in page for node in pictures["pics-open"])
    assert not any(node in page for node in pictures["pics-closed"])


def test_the_image_files_are_refused_to_outsiders(pictures: dict[str, list[str]]) -> None:
    owner = Client()
    owner.force_login(User.objects.get(username="owner"))
    outsider = Client()
    outsider.force_login(User.objects.create_user("outsider"))
    closed, opened = pictures["pics-closed"][0], pictures["pics-open"][0]
    for variant in ("thumb", "full"):
        shown = owner.get(f"/media/images/{closed}/{variant}")
        assert shown.status_code == 200 and shown["Content-Type"] == "image/png"
        assert b"".join(shown.streaming_content).startswith(b"\x89PNG")  # type: ignore[attr-defined]
        assert outsider.get(f"/media/images/{closed}/{variant}").status_code == 404
        assert Client().get(f"/media/images/{closed}/{variant}").status_code == 404
        assert outsider.get(f"/media/images/{opened}/{variant}").status_code == 200
