"""The search pages: "/" and "/ask/", an answer's page and token stream, the history and the image
files, told as stories of an asker, another user, an auditor, an admin and anonymous visitors.
The graph and the models are replaced by small fakes (the integration tests use the real ones)."""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from PIL import Image
from pytest_django.fixtures import Settings

from apps.accounts.roles import AUDITOR
from apps.accounts.services import collection_ensure, role_set
from apps.answers import search, services
from apps.answers.access import SESSION_KEY
from apps.answers.images import ImageHit, ImageResults
from apps.answers.models import Answer
from apps.answers.types import AnswerError

pytestmark = pytest.mark.django_db

IMAGE_ID = "f" * 32
TEXT = "The society was founded in 1912. Its first president was Gwendolyn Pryce."
SOURCE = {
    "id": "c" * 32,
    "number": 1,
    "kind": "chunk",
    "document": "society.txt",
    "document_id": "d" * 32,
    "collection": "moss",
    "text": TEXT,
    "score": 0.9,
    "paths": [["c" * 32]],
    "path_details": [{"nodes": ["c" * 32], "relationships": [], "score": 0.9}],
    "sentences": [[0, 32], [33, 73]],
}
TIMINGS = {"analysis": 10.0, "embed": 30.0, "vector_search": 20.0, "graph_expansion": 40.0, "generation": 900.0}


class FakeDriver:
    """The graph: one image (``IMAGE_ID``) in the "vault" collection; no path names."""

    def __init__(self, image: dict[str, Any] | None = None) -> None:
        self.image = image

    def execute_query(self, query: str, **params: Any) -> tuple[list[dict[str, Any]], None, None]:
        if "HAS_IMAGE" in query and self.image is not None and params.get("id") == IMAGE_ID:
            return [self.image], None, None
        return [], None, None


@dataclass
class People:
    asker: User
    other: User
    auditor: User
    admin: User

    def client(self, who: str) -> Client:
        client = Client()
        if who != "visitor":
            client.force_login(getattr(self, who))
        return client


@pytest.fixture
def people(db: None) -> People:
    asker, other, auditor = (User.objects.create_user(name) for name in ("asker", "other", "auditor"))
    role_set(username="auditor", role=AUDITOR)
    return People(asker, other, auditor, User.objects.create_superuser("root"))


@pytest.fixture(autouse=True)
def no_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("apps.answers.pages.get_driver", FakeDriver)
    monkeypatch.setattr("apps.answers.search.get_driver", FakeDriver)


def an_answer(user: User | None, **fields: Any) -> Answer:
    values: dict[str, Any] = {
        "question": "Who was the first president?",
        "state": Answer.DONE,
        "answer": "Gwendolyn Pryce was the first president [1].",
        "generated": "Gwendolyn Pryce was the first president.",
        "sources": [SOURCE],
        "timings_ms": TIMINGS,
        "user": user,
        **fields,
    }
    return Answer.objects.create(**values)


# --- the search page ---------------------------------------------------------------------------


def test_the_search_page_is_home_and_ask_too(people: People) -> None:
    for url in ("/", "/ask/"):
        page = people.client("visitor").get(url).content.decode()
        assert '<label for="id_question">Question</label>' in page
        assert "autofocus" in page and 'hx-post="/"' in page and 'action="/"' in page
        assert "answers/search.js" in page and 'id="id_images"' in page
        assert '<link rel="icon" href="data:,">' in page
    assert "History" not in people.client("visitor").get("/").content.decode()
    assert 'href="/history/">History</a>' in people.client("asker").get("/").content.decode()


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Asking without models: retrieval and generation replaced by ready answers."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(search, "default_tools", lambda: None)

    def start(**options: Any) -> Answer:
        calls.append(options)
        return an_answer(options["user"], state=Answer.RETRIEVED, answer="", generated="")

    def ask(**options: Any) -> dict[str, Any]:
        calls.append(options)
        return {"answer_id": str(an_answer(options["user"]).id)}

    monkeypatch.setattr(services, "answer_start", start)
    monkeypatch.setattr(services, "answer_ask", ask)
    return calls


def test_without_javascript_the_post_waits_for_the_whole_answer(people: People, asked: list[dict[str, Any]]) -> None:
    page = people.client("asker").post("/", {"question": "Who was the first president?"}).content.decode()
    assert '<a class="cite" href="#source-1">[1]</a>' in page
    assert 'id="source-1"' in page and "<mark>Its first president was Gwendolyn Pryce.</mark>" in page
    assert 'class="stage stage-generation" style="width: 90.00%"' in page and "generation 900.0 ms" in page
    assert "data-stream-url" not in page and "/audit/answers/" not in page, "the asker is no auditor"
    assert asked[0]["user"] == people.asker and asked[0]["collections"] == []


def test_with_htmx_the_evidence_comes_at_once_and_the_answer_streams(
    people: People, asked: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = people.client("visitor")
    fragment = client.post("/", {"question": "Who?"}, HTTP_HX_REQUEST="true").content.decode()
    answer = Answer.objects.get()
    assert "<html" not in fragment and f'data-stream-url="/ask/{answer.id}/stream"' in fragment
    assert f'data-answer-url="/ask/{answer.id}/"' in fragment and 'id="source-1"' in fragment
    assert client.session[SESSION_KEY] == [str(answer.id)], "the anonymous asker's session may read it"

    def events(streamed: Answer) -> Iterator[tuple[str, dict[str, Any]]]:
        yield "started", {}
        yield "token", {"text": "Gwendolyn"}
        yield "token", {"text": " <b>Pryce</b>"}
        Answer.objects.filter(id=streamed.id).update(state=Answer.DONE, answer="Gwendolyn Pryce [1].")
        yield "done", {"answer": "Gwendolyn Pryce [1]."}

    monkeypatch.setattr(services, "generation_events", events)
    response = client.get(f"/ask/{answer.id}/stream")
    assert response["Content-Type"] == "text/event-stream" and response["Cache-Control"] == "no-cache"
    body = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    assert body.split("\n\n")[:3] == [
        'event: token\ndata: {"text": "Gwendolyn"}',
        'event: token\ndata: {"text": " <b>Pryce</b>"}',
        "event: done\ndata: {}",
    ]
    final = client.get(f"/ask/{answer.id}/", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in final and '<a class="cite" href="#source-1">[1]</a>' in final
    assert people.client("visitor").get(f"/ask/{answer.id}/stream").status_code == 404, "another session"
    assert people.client("asker").get(f"/ask/{answer.id}/").status_code == 404


def test_a_fault_is_a_clear_message(people: People, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "default_tools", lambda: None)

    def down(**options: Any) -> Answer:
        raise AnswerError(services.GRAPH_DOWN, stage="graph_expansion")

    monkeypatch.setattr(services, "answer_start", down)
    fragment = people.client("asker").post("/", {"question": "Who?"}, HTTP_HX_REQUEST="true").content.decode()
    assert '<p class="down" role="alert">The knowledge graph is not reachable right now' in fragment
    empty = people.client("asker").post("/ask/", {"question": ""}).content.decode()
    assert "Please type a question" in empty


def test_image_search_shows_a_thumbnail_grid(people: People, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        search, "default_tools", lambda: type("T", (), {"driver": 0, "text": 0, "clip": 0, "search": 0})
    )
    seen: dict[str, Any] = {}

    def found(**options: Any) -> ImageResults:
        seen.update(options)
        return ImageResults("a cat", "text", (ImageHit(IMAGE_ID, "pets/cat.png", "vault", "Image of a <cat>.", 0.61),))

    monkeypatch.setattr(search, "images_search", found)
    page = people.client("asker").post("/", {"question": "a cat", "images": "on"}).content.decode()
    assert f'<img src="/media/images/{IMAGE_ID}/thumb" alt="Image of a &lt;cat&gt;."' in page
    assert f'href="/media/images/{IMAGE_ID}/full"' in page and "pets/<wbr>cat.<wbr>png" in page
    assert "score 0.610" in page
    assert seen["query"] == "a cat" and seen["collections"] == [] and not Answer.objects.exists()


# --- who may open an answer ------------------------------------------------------------------


def test_only_the_asker_and_admins_open_an_answer(people: People) -> None:
    answer = an_answer(people.asker)
    for who, status in (("asker", 200), ("admin", 200), ("other", 404), ("auditor", 404), ("visitor", 404)):
        assert people.client(who).get(f"/ask/{answer.id}/").status_code == status, who
        assert people.client(who).get(f"/ask/{answer.id}/stream").status_code == status, who
    assert people.client("asker").get(f"/ask/{uuid.uuid4()}/").status_code == 404
    page = people.client("asker").get(f"/ask/{answer.id}/").content.decode()
    assert 'value="Who was the first president?"' in page, "the page keeps the question in the form"


def test_the_audit_link_is_for_auditors(people: People) -> None:
    mine = an_answer(people.auditor)
    page = people.client("auditor").get(f"/ask/{mine.id}/").content.decode()
    assert f'href="/audit/answers/{mine.id}/">audit page</a>' in page
    assert f'href="/ask/{mine.id}/">answer page</a>' in page
    theirs = an_answer(people.asker)
    assert "/audit/answers/" not in people.client("asker").get(f"/ask/{theirs.id}/").content.decode()


def test_a_finished_answer_streams_its_end_at_once(people: People) -> None:
    done = an_answer(people.asker)
    failed = an_answer(people.asker, state=Answer.FAILED, answer="", error="No generation worker picked it up.")
    client = people.client("asker")
    assert b"".join(client.get(f"/ask/{done.id}/stream").streaming_content) == b"event: done\ndata: {}\n\n"  # type: ignore[attr-defined]
    body = b"".join(client.get(f"/ask/{failed.id}/stream").streaming_content).decode()  # type: ignore[attr-defined]
    assert body == 'event: error\ndata: {"message": "No generation worker picked it up."}\n\n'


# --- history -----------------------------------------------------------------------------------


def test_history_lists_the_askers_own_questions_newest_first(people: People) -> None:
    assert people.client("visitor").get("/history/").status_code == 302
    mine = [an_answer(people.asker, question=f"question {i}") for i in range(25)]
    an_answer(people.other, question="not yours")
    first = people.client("asker").get("/history/").content.decode()
    assert first.index("question 24") < first.index("question 23") and "not yours" not in first
    assert f'href="/ask/{mine[-1].id}/">question 24</a>' in first and "page 1 of 2" in first
    second = people.client("asker").get("/history/?page=2").content.decode()
    assert "question 4<" in second and "question 5<" not in second
    assert "You have not asked anything yet" in people.client("auditor").get("/history/").content.decode()


# --- image files -------------------------------------------------------------------------------


@pytest.fixture
def vault_image(people: People, tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> bytes:
    """A PNG (and its thumbnail) of the asker's private "vault" collection."""
    settings.MEDIA_ROOT = tmp_path / "media"
    collection_ensure(name="vault", owner=people.asker)
    data = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(data, format="PNG")
    for name in ("images/ff/full.png", "thumbnails/ff/thumb.png"):
        (tmp_path / "media" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "media" / name).write_bytes(data.getvalue())
    (tmp_path / "secret.txt").write_text("outside the media folder")
    record = {"path": "images/ff/full.png", "thumbnail": "thumbnails/ff/thumb.png", "collection": "vault"}
    monkeypatch.setattr("apps.answers.media.get_driver", lambda: FakeDriver(record))
    return data.getvalue()


def test_an_image_is_served_only_to_readers_of_its_collection(people: People, vault_image: bytes) -> None:
    for variant in ("thumb", "full"):
        response = people.client("asker").get(f"/media/images/{IMAGE_ID}/{variant}")
        assert response.status_code == 200 and response["Content-Type"] == "image/png"
        assert b"".join(response.streaming_content) == vault_image  # type: ignore[attr-defined]
        assert response["X-Content-Type-Options"] == "nosniff"
        assert people.client("admin").get(f"/media/images/{IMAGE_ID}/{variant}").status_code == 200
        for outsider in ("other", "visitor"):
            assert people.client(outsider).get(f"/media/images/{IMAGE_ID}/{variant}").status_code == 404
    client = people.client("asker")
    assert client.get(f"/media/images/{IMAGE_ID}/original").status_code == 404
    assert client.get(f"/media/images/{'0' * 32}/thumb").status_code == 404, "not in the graph"
    assert client.get("/media/images/..%2F..%2Fsecret.txt/full").status_code == 404


def test_a_stored_path_outside_media_root_is_refused(
    people: People, vault_image: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in ("../secret.txt", "/etc/passwd", "", "images/ff/missing.png"):
        record = {"path": path, "thumbnail": path, "collection": "vault"}
        monkeypatch.setattr("apps.answers.media.get_driver", lambda r=record: FakeDriver(r))
        assert people.client("asker").get(f"/media/images/{IMAGE_ID}/full").status_code == 404, path


def test_stream_bodies_are_json_per_event() -> None:
    assert (
        search._event("token", text='a "quoted"\nline') == 'event: token\ndata: {"text": "a \\"quoted\\"\\nline"}\n\n'
    )
    assert json.loads(search._event("error", message="é").split("data: ")[1]) == {"message": "é"}
