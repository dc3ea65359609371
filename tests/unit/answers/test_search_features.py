"""The search page's helpers for a reader: a collection picker of what they may read, example
questions drawn from it, long questions refused with a message (never cut), image results cut at a
score with the rest one click away, and thumbs up / down with a note that curators list. The graph
is a small fake; the browser tests use the real stack."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client

from apps.accounts.roles import AUDITOR, CURATOR
from apps.accounts.services import collection_ensure, collection_grant, role_set
from apps.answers import examples, search, services
from apps.answers.images import ImageHit, ImageResults
from apps.answers.models import Answer, Feedback
from apps.ingest.models import Document

pytestmark = pytest.mark.django_db

SOURCE = {"id": "c" * 32, "number": 1, "kind": "chunk", "document": "a.txt", "collection": "moss", "text": "Moss."}


class ExampleDriver:
    """Answers the example query with fixed names and remembers the collections it was given."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def execute_query(self, query: Any, **params: Any) -> tuple[list[dict[str, Any]], None, None]:
        self.calls.append(params)
        if "SEARCH_EXAMPLE" in str(getattr(query, "text", "")) or "HAS_CHUNK" in str(getattr(query, "text", query)):
            rows = [
                {"name": "Gwendolyn Pryce", "type": "PERSON"},
                {"name": "Eluned Morgan", "type": "PERSON"},
                {"name": "Bryological Society of Wales", "type": "ORG"},
                {"name": "Tregaron", "type": "GPE"},
            ]
            return rows, None, None
        return [], None, None


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    cache.clear()


@pytest.fixture
def driver(monkeypatch: pytest.MonkeyPatch) -> ExampleDriver:
    fake = ExampleDriver()
    monkeypatch.setattr(search, "get_driver", lambda: fake)
    monkeypatch.setattr("apps.answers.pages.get_driver", lambda: fake)
    return fake


def document(collection: str, path: str) -> Document:
    return Document.objects.create(
        id=f"{collection}-{path}", collection=collection, path=path, mime="text/plain", sha256="0" * 64, size=1
    )


@pytest.fixture
def library(db: None) -> None:
    """ "moss" is public, "vault" private (granted to "member"); each holds a document."""
    collection_ensure(name="moss", public=True)
    collection_ensure(name="vault")
    document("moss", "a.txt")
    document("vault", "b.txt")
    User.objects.create_user("member")
    collection_grant(collection="vault", username="member")


def record(calls: list[dict[str, Any]], options: dict[str, Any]) -> dict[str, Any]:
    calls.append(options)
    return {}


def client_of(username: str | None) -> Client:
    client = Client()
    if username:
        client.force_login(User.objects.get_or_create(username=username)[0])
    return client


def options(page: str) -> list[str]:
    select = re.search(r'<select name="collection"[^>]*>(.*?)</select>', page, re.S)
    assert select, page
    return re.findall(r'<option value="([^"]*)"', select.group(1))


# --- the collection picker --------------------------------------------------------------------


def test_the_picker_lists_only_what_the_reader_may_read(library: None, driver: ExampleDriver) -> None:
    assert options(client_of(None).get("/").content.decode()) == ["", "moss"]
    assert options(client_of("member").get("/").content.decode()) == ["", "moss", "vault"]
    assert options(client_of("otto").get("/").content.decode()) == ["", "moss"]


def test_a_collection_the_reader_may_not_read_is_refused_like_a_missing_one(
    library: None, driver: ExampleDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[dict[str, Any]] = []
    monkeypatch.setattr(search, "default_tools", lambda: None)
    monkeypatch.setattr(services, "answer_ask", lambda **o: record(asked, o))
    outsider = client_of("otto")
    refused = outsider.post("/", {"question": "Who?", "collection": "vault"}).content.decode()
    missing = outsider.post("/", {"question": "Who?", "collection": "nowhere"}).content.decode()
    assert "vault is not a collection you may read." in refused
    assert "nowhere is not a collection you may read." in missing
    assert not asked and not Answer.objects.exists()


# --- long questions -----------------------------------------------------------------------------


def test_a_long_question_is_refused_with_its_length_and_kept_in_the_field(
    library: None, driver: ExampleDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[dict[str, Any]] = []
    monkeypatch.setattr(services, "answer_ask", lambda **o: record(asked, o))
    pasted = "moss " * 500  # 2,499 characters once its spaces are collapsed
    page = client_of(None).post("/", {"question": pasted}).content.decode()
    assert "The question is 2,499 characters long; at most 2,000 are accepted." in page
    assert "maxlength" not in re.search(r"<input[^>]*id_question[^>]*>", page).group(0)  # type: ignore[union-attr]
    assert pasted.strip() in page, "the whole text stays in the field"
    fragment = client_of(None).post("/", {"question": pasted}, HTTP_HX_REQUEST="true").content.decode()
    assert 'role="alert">The question is 2,499 characters long' in fragment
    assert not asked and not Answer.objects.exists()


# --- example questions --------------------------------------------------------------------------


def test_examples_are_one_per_type_first_and_phrased_for_their_type() -> None:
    rows = [("Gwendolyn Pryce", "PERSON"), ("Eluned Morgan", "PERSON"), ("Moss Society", "ORG"), ("Tregaron", "GPE")]
    assert examples.pick(rows) == ["Who is Gwendolyn Pryce?", "What is Moss Society?", "Where is Tregaron?"]
    assert examples.pick(rows[:2]) == ["Who is Gwendolyn Pryce?", "Who is Eluned Morgan?"]
    assert examples.pick([]) == []


def test_examples_read_only_the_readers_collections_and_link_to_a_filled_form(
    library: None, driver: ExampleDriver
) -> None:
    page = client_of("member").get("/").content.decode()
    assert driver.calls[-1]["collections"] == ["moss", "vault"]
    assert '<a class="example" href="/?question=Who%20is%20Gwendolyn%20Pryce%3F">Who is Gwendolyn Pryce?</a>' in page
    client_of(None).get("/")
    assert driver.calls[-1]["collections"] == ["moss"]
    calls = len(driver.calls)
    client_of(None).get("/")
    assert len(driver.calls) == calls, "the examples of a set of collections are cached"
    filled = client_of(None).get("/", {"question": "Where is Tregaron?"}).content.decode()
    assert 'value="Where is Tregaron?"' in filled


def test_no_examples_when_the_graph_cannot_be_read(library: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from neo4j.exceptions import ServiceUnavailable

    class Down:
        def execute_query(self, *args: Any, **kwargs: Any) -> None:
            raise ServiceUnavailable("down")

    monkeypatch.setattr(search, "get_driver", Down)
    page = client_of(None).get("/")
    assert page.status_code == 200 and 'class="examples"' not in page.content.decode()


# --- image results ------------------------------------------------------------------------------


def hit(node: str, score: float) -> ImageHit:
    return ImageHit(node * 32, f"pictures/{node}_long_file_name.png", "moss", f"image {node}", score)


def test_images_below_the_cut_off_are_one_click_away() -> None:
    results = ImageResults("moss", "clip", (hit("a", 0.32), hit("b", 0.29), hit("c", 0.2), hit("d", 0.1)))
    assert results.cutoff == pytest.approx(0.272)
    assert [h.node_id[0] for h in results.strong] == ["a", "b"]
    assert [h.node_id[0] for h in results.weaker] == ["c", "d"]
    assert ImageResults("x", "text", ()).strong == ()
    negative = ImageResults("x", "text", (hit("a", -0.1), hit("b", -0.5)))
    assert [h.node_id[0] for h in negative.strong] == ["a"]


def test_the_image_grid_shows_the_strong_ones_and_a_show_more(
    library: None, driver: ExampleDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = type("T", (), {"driver": 0, "text": 0, "clip": 0, "search": 0})
    monkeypatch.setattr(search, "default_tools", lambda: tools)
    results = ImageResults("moss", "clip", (hit("a", 0.32), hit("c", 0.2), hit("d", 0.1)))
    monkeypatch.setattr(search, "images_search", lambda **o: results)
    page = client_of(None).post("/", {"question": "moss", "images": "on"}).content.decode()
    shown, more = page.split('<details class="more-images">')
    assert "1 image for “moss”" in shown and "a" * 32 in shown and "c" * 32 not in shown
    assert "Show 2 more images (lower scores)" in more and "c" * 32 in more and "d" * 32 in more
    assert "pictures/<wbr>a_<wbr>long_<wbr>file_<wbr>name.<wbr>png" in shown


# --- feedback -----------------------------------------------------------------------------------


def answered(user: User | None, collection: str = "moss") -> Answer:
    return Answer.objects.create(
        question="Who was the first president?",
        state=Answer.DONE,
        answer="Gwendolyn Pryce [1].",
        sources=[{**SOURCE, "collection": collection}],
        user=user,
    )


def test_a_reader_rates_an_answer_and_can_change_it(library: None, driver: ExampleDriver) -> None:
    member = User.objects.get(username="member")
    answer = answered(member)
    client = client_of("member")
    page = client.get(f"/ask/{answer.id}/").content.decode()
    assert f'hx-post="/ask/{answer.id}/feedback"' in page and "Was this answer helpful?" in page
    fragment = client.post(
        f"/ask/{answer.id}/feedback", {"vote": "down", "note": "wrong year"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "<html" not in fragment and "your thumbs down and note are saved" in fragment
    assert 'value="down" class="vote vote-down" aria-pressed="true"' in fragment
    response = client.post(f"/ask/{answer.id}/feedback", {"vote": "up"})
    assert response.status_code == 302 and response["Location"] == f"/ask/{answer.id}/"
    [feedback] = Feedback.objects.all()
    assert (feedback.vote, feedback.note, feedback.user) == ("up", "", member)
    assert "You rated this answer helpful" in client.get(f"/ask/{answer.id}/").content.decode()


def test_feedback_is_refused_for_bad_input_and_for_answers_the_reader_cannot_open(
    library: None, driver: ExampleDriver
) -> None:
    answer = answered(User.objects.get(username="member"))
    client = client_of("member")
    bad = client.post(f"/ask/{answer.id}/feedback", {"vote": "sideways"})
    assert bad.status_code == 400 and "Choose thumbs up or thumbs down." in bad.content.decode()
    long_note = client.post(f"/ask/{answer.id}/feedback", {"vote": "up", "note": "x" * 1001}, HTTP_HX_REQUEST="true")
    assert "at most 1,000 are kept" in long_note.content.decode()
    assert client_of("otto").post(f"/ask/{answer.id}/feedback", {"vote": "up"}).status_code == 404
    assert client_of("member").get(f"/ask/{answer.id}/feedback").status_code == 405
    assert not Feedback.objects.exists()


def test_curators_list_feedback_on_answers_they_may_read(library: None, driver: ExampleDriver) -> None:
    member = User.objects.get(username="member")
    public, private = answered(member), answered(member, collection="vault")
    Feedback.objects.create(answer=public, user=member, vote="down", note="the year is wrong")
    Feedback.objects.create(answer=private, user=member, vote="up", note="secret praise")
    User.objects.create_user("cora")
    role_set(username="cora", role=CURATOR)
    listing = client_of("cora").get("/curation/feedback/").content.decode()
    assert "the year is wrong" in listing and "secret praise" not in listing
    assert "audit page" not in listing
    role_set(username="cora", role=AUDITOR)
    collection_grant(collection="vault", username="cora")
    both = client_of("cora").get("/curation/feedback/").content.decode()
    assert "secret praise" in both and f"/audit/answers/{public.id}/" in both
    assert "secret praise" not in client_of("cora").get("/curation/feedback/", {"vote": "down"}).content.decode()
    assert client_of("otto").get("/curation/feedback/").status_code in (302, 403)


# --- stop -----------------------------------------------------------------------------------------


def test_the_asker_stops_an_answer_and_nobody_else_can(
    library: None, driver: ExampleDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apps.answers import streams

    events: list[tuple[str, str]] = []
    monkeypatch.setattr(streams, "event_publish", lambda answer_id, event, **data: events.append((answer_id, event)))
    member = User.objects.get(username="member")
    queued = answered(member)
    Answer.objects.filter(id=queued.id).update(state=Answer.RETRIEVED)
    assert client_of("otto").post(f"/ask/{queued.id}/stop", HTTP_ACCEPT="application/json").status_code == 404
    assert client_of("member").get(f"/ask/{queued.id}/stop").status_code == 405
    response = client_of("member").post(f"/ask/{queued.id}/stop", HTTP_ACCEPT="application/json")
    assert response.json() == {"state": "stopped"} and events == [(str(queued.id), streams.ERROR)]
    again = client_of("member").post(f"/ask/{queued.id}/stop")
    assert again.status_code == 302 and again["Location"] == f"/ask/{queued.id}/"
    page = client_of("member").get(f"/ask/{queued.id}/").content.decode()
    assert "Stopped at your request before any of the answer was written." in page


def test_a_streaming_answer_offers_stop(library: None, driver: ExampleDriver) -> None:
    streaming = answered(User.objects.get(username="member"))
    Answer.objects.filter(id=streaming.id).update(state=Answer.GENERATING)
    page = client_of("member").get(f"/ask/{streaming.id}/").content.decode()
    assert f'<form class="stop" method="post" action="/ask/{streaming.id}/stop">' in page


# --- follow-up ------------------------------------------------------------------------------------


def test_a_follow_up_is_asked_with_the_question_it_refers_back_to(
    library: None, driver: ExampleDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    member = User.objects.get(username="member")
    first = answered(member)
    page = client_of("member").get(f"/ask/{first.id}/").content.decode()
    assert f'<input type="hidden" name="previous" value="{first.id}">' in page and ">Follow-up</label>" in page
    asked: list[dict[str, Any]] = []
    monkeypatch.setattr(search, "default_tools", lambda: None)
    monkeypatch.setattr(services, "answer_ask", lambda **o: {"answer_id": str(answered(member).id), **record(asked, o)})
    client_of("member").post("/", {"question": "When was it founded?", "previous": str(first.id)})
    client_of("member").post("/", {"question": "Where is the Severn Bridge?", "previous": str(first.id)})
    client_of("otto").post("/", {"question": "When was it founded?", "previous": str(first.id)})
    assert [o["question"] for o in asked] == [
        "Who was the first president? When was it founded?",
        "Where is the Severn Bridge?",
        "When was it founded?",  # someone else's answer gives no context
    ]
