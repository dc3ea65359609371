"""The answer cache: its key, what makes a cached answer stale (the change log), the settle window, the
asker's own copy; and the ETag of answers on the API and the answer page."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.answers.cache import cache_copy, cache_key, cache_lookup, cached_from, log_position, question_normal, settled
from apps.answers.models import Answer
from apps.answers.pipeline import RetrievalParams
from apps.answers.scope import EVERY_COLLECTION
from apps.ledger.content import document_content, entity_content
from apps.ledger.models import ChangeEntry
from apps.ledger.services import Change, entries_append
from apps.provenance.models import AttributionRecord

pytestmark = pytest.mark.django_db

MODELS = {"text_embedder": "e", "reranker": "r", "generator": "g"}


@pytest.fixture(autouse=True)
def cache_on(settings: SettingsWrapper) -> None:
    settings.ANSWER_CACHE = True


def key(question: str = "Who founded it?", collections: Any = ("lab",), **changed: Any) -> str:
    options: dict[str, Any] = {
        "question": question, "collections": collections, "mode": "graph", "generate": True, "models": MODELS,
        "params": RetrievalParams(),
    }  # fmt: skip
    return cache_key(**{**options, **changed})


def document_logged(collection: str, path: str = "a.txt") -> None:
    document = {"id": f"{collection}-{path}", "collection": collection, "path": path, "sha256": "0" * 64}
    with transaction.atomic():
        entries_append(
            actor="user:ana",
            changes=[Change("document.ingested", "Document", f"{collection}/{path}", None,
                            document_content(document=document, units=[]))],
        )  # fmt: skip


def entity_renamed() -> None:
    with transaction.atomic():
        entries_append(
            actor="curator:cy",
            changes=[Change("entity.renamed", "Entity", "e1", entity_content(entity_id="e1", name="a", type_="ORG"),
                            entity_content(entity_id="e1", name="b", type_="ORG"))],
        )  # fmt: skip


def cached(answer_key: str, position: int, **fields: Any) -> Answer:
    values = {
        "question": "Who founded it?", "collections": ["lab"], "state": Answer.DONE, "answer": "Marigold Fenwick.",
        "cache_key": answer_key, "log_position": position, "ledger": {"tree_size": position, "sources": {}},
    }  # fmt: skip
    return Answer.objects.create(**{**values, **fields})


def test_the_key_normalises_the_text_and_holds_everything_else_an_answer_depends_on() -> None:
    assert question_normal("  Who FOUNDED\n it ?? ") == "who founded it"
    assert key("who founded it") == key("Who  founded it?")
    assert key(collections=["lab", "x"]) == key(collections=("x", "lab"))
    variants = {
        key(),
        key(collections=["other"]),
        key(collections=EVERY_COLLECTION),
        key(mode="dense"),
        key(generate=False),
        key(models={**MODELS, "generator": "other"}),
        key(params=RetrievalParams(rerank_pool=41)),
    }
    assert len(variants) == 7


def test_a_cached_answer_holds_until_an_entry_touches_its_collections() -> None:
    document_logged("lab", "old.txt")
    position = log_position()
    answer = cached(key(), position)
    assert cache_lookup(key=key(), collections=["lab"]) == answer
    assert cache_lookup(key=key(collections=["other"]), collections=["other"]) is None

    document_logged("elsewhere")  # another collection's document: not stale
    assert cache_lookup(key=key(), collections=["lab"]) == answer
    document_logged("lab", "new.txt")  # a document of its collection: stale
    assert cache_lookup(key=key(), collections=["lab"]) is None

    again = cached(key(), log_position())
    assert cache_lookup(key=key(), collections=["lab"]) == again
    entity_renamed()  # entities are shared by every collection: stale
    assert cache_lookup(key=key(), collections=["lab"]) is None


def test_only_finished_answers_recorded_as_cacheable_are_served(settings: SettingsWrapper) -> None:
    position = log_position()
    cached(key(), position, state=Answer.FAILED)
    Answer.objects.create(question="q", state=Answer.DONE, cache_key=key(), log_position=None)
    assert cache_lookup(key=key(), collections=["lab"]) is None
    served = cached(key(), position)
    assert cache_lookup(key=key(), collections=["lab"]) == served
    settings.ANSWER_CACHE = False
    assert cache_lookup(key=key(), collections=["lab"]) is None


def test_answers_started_right_after_a_change_are_not_cached(settings: SettingsWrapper) -> None:
    assert settled(["lab"])
    document_logged("lab")
    assert not settled(["lab"]) and settled(["other"])
    entity_renamed()
    assert not settled(["other"])
    settings.ANSWER_CACHE_SETTLE_SECONDS = 0
    assert settled(["lab"])
    old = (datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert ChangeEntry.objects.filter(time__lt=old).count() == 0


def test_a_hit_is_the_askers_own_copy_with_its_provenance() -> None:
    asker = User.objects.create(username="bo")
    found = cached(key(), log_position(), stats={"evidence": {"coverage": 1.0}}, sources=[{"document_id": "d1"}])
    AttributionRecord.objects.create(answer=found, mode="fast", method="m", model="g", tokens=3, payload=b"xyz")
    copy = cache_copy(found, question="who founded it", user=asker, started=0.0)
    assert copy.id != found.id and copy.user == asker and copy.question == "who founded it"
    assert (copy.answer, copy.sources, copy.log_position) == (found.answer, found.sources, found.log_position)
    assert cached_from(copy) == str(found.id) and cached_from(found) is None
    assert copy.stats["evidence"] == {"coverage": 1.0}
    assert AttributionRecord.objects.get(answer=copy).payload == b"xyz"
    assert AttributionRecord.objects.filter(answer=found).count() == 1


def test_the_api_and_the_page_tag_an_answer_and_honour_if_none_match() -> None:
    owner = User.objects.create(username="ana")
    answer = cached(key(), log_position(), user=owner)
    client = Client()
    client.force_login(owner)
    first = client.get(f"/api/v1/answers/{answer.id}")
    etag = first["ETag"]
    assert first.status_code == 200 and etag.startswith('"') and first["Cache-Control"] == "no-cache"
    assert "Authorization" in first["Vary"] and "Cookie" in first["Vary"]
    again = client.get(f"/api/v1/answers/{answer.id}", HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again["ETag"] == etag and again.content == b""
    page = client.get(f"/ask/{answer.id}/")
    assert page.status_code == 200 and page["ETag"]
    assert client.get(f"/ask/{answer.id}/", HTTP_IF_NONE_MATCH=page["ETag"]).status_code == 304
    entity_renamed()  # the page shows path names, which a logged change may rename: a new page tag
    renamed = client.get(f"/ask/{answer.id}/", HTTP_IF_NONE_MATCH=page["ETag"])
    assert renamed.status_code == 200 and renamed["ETag"] != page["ETag"]
    assert client.get(f"/api/v1/answers/{answer.id}", HTTP_IF_NONE_MATCH=etag).status_code == 304  # the answer: same

    Answer.objects.filter(id=answer.id).update(answer="Someone else.")  # a changed answer: a new tag
    changed = client.get(f"/api/v1/answers/{answer.id}", HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag
    stranger = Client()
    stranger.force_login(User.objects.create(username="eve"))
    assert stranger.get(f"/api/v1/answers/{answer.id}", HTTP_IF_NONE_MATCH=etag).status_code == 404
