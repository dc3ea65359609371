"""The OpenAI-compatible chat API with the official ``openai`` package against the real stack (test web
server, Celery worker generating on the CPU, Neo4j): the models, a question answered whole and streamed
with usage and citations from the one small document of a private collection, and the refusals (a wrong
key, an unknown model; a collection the key's user cannot read answers like a missing one).

The web server and the worker use the test database under var/test, so the user, the grant and the key
are made through ``manage.py``, as an operator would."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.conftest import web_server_running
from tests.support import manage

pytestmark = pytest.mark.integration

SOCIETY = "The Bryological Society of Wales was founded in 1912. Its first president was Gwendolyn Pryce."
OTHER = "The Severn Bridge carries the motorway across the estuary near Bristol."
QUESTION = "Who was the first president of the Bryological Society of Wales?"
GRANT_SCRIPT = """
import os
from django.contrib.auth import get_user_model
from apps.accounts.models import Collection, CollectionGrant
user, _ = get_user_model().objects.get_or_create(username=os.environ["API_USER"])
CollectionGrant.objects.get_or_create(collection=Collection.objects.get(name=os.environ["COLLECTION"]), user=user)
"""


@dataclass(frozen=True)
class Setup:
    web: str
    key: str
    readable: str  # the user's collection: one document
    unreadable: str  # another user's collection: one document too


def ingest(folder: Path, name: str, text: str, collection: str) -> None:
    folder.mkdir()
    (folder / name).write_text(text)
    ingested = manage("ingest", str(folder), "--collection", collection, "--wait", "--json")
    assert ingested.returncode == 0, ingested.stdout + ingested.stderr


def ingest_both(root: Path, readable: str, unreadable: str) -> None:
    """The two collections' documents, ingested at once (two ``manage.py ingest`` processes)."""
    with ThreadPoolExecutor(2) as pool:
        jobs = [
            pool.submit(ingest, root / "mine" / "moss", "society.txt", SOCIETY, readable),
            pool.submit(ingest, root / "theirs" / "roads", "bridge.txt", OTHER, unreadable),
        ]
        for job in jobs:
            job.result()


@pytest.fixture(scope="module")
def setup(live_services: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    run = uuid.uuid4().hex[:8]
    readable, unreadable, user = f"oa-{run}", f"oa-other-{run}", f"oa-user-{run}"
    root = tmp_path_factory.mktemp("openai")
    (root / "mine").mkdir()
    (root / "theirs").mkdir()
    ingest_both(root, readable, unreadable)
    granted = manage("shell", "-c", GRANT_SCRIPT, API_USER=user, COLLECTION=readable)
    assert granted.returncode == 0, granted.stdout + granted.stderr
    created = manage("apikeys", "create", user, "--name", "openai tests")
    assert created.returncode == 0, created.stdout + created.stderr
    with web_server_running() as web:
        yield Setup(web, created.stdout.strip().splitlines()[-1], readable, unreadable)


def client(setup: Setup, key: str | None = None) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{setup.web}/v1", api_key=key or setup.key, max_retries=0, timeout=300)


def ask(setup: Setup, collections: list[str], model: str = "ragkg") -> Any:
    return client(setup).chat.completions.create(
        model=model, messages=[{"role": "user", "content": QUESTION}], extra_body={"collections": collections}
    )


def test_the_models_are_listed(setup: Setup) -> None:
    models = {model.id: model for model in client(setup).models.list()}
    assert {"ragkg", "ragkg-dense"} <= set(models)
    assert models["ragkg"].owned_by == "ragkg"


def test_a_question_answered_whole(setup: Setup) -> None:
    response = ask(setup, [setup.readable])
    [choice] = response.choices
    assert choice.finish_reason == "stop" and choice.message.role == "assistant"
    assert choice.message.content and choice.message.content.strip()
    assert response.id.startswith("chatcmpl-") and response.model == "ragkg"
    usage = response.usage
    assert usage is not None and usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    citations = response.to_dict()["citations"]
    assert citations["answer"] == choice.message.content and citations["not_found"] is False
    assert [source["document"] for source in citations["sources"]] == ["moss/society.txt"]
    assert citations["tokens"], "token-level provenance"
    assert citations["items"], f"no [n] in {choice.message.content!r}"
    for item in citations["items"]:
        assert item["document"] == "moss/society.txt" and item["document_id"] and item["unit_id"]
        marker = choice.message.content[item["marker_start"] : item["marker_end"]]
        assert f"[{item['number']}]" in marker
        if item["sentence"] is not None:
            assert item["sentence"]["text"] in SOCIETY


def test_a_question_streamed(setup: Setup) -> None:
    stream = client(setup).chat.completions.create(
        model="ragkg-dense",
        messages=[{"role": "user", "content": QUESTION}],
        stream=True,
        extra_body={"collections": [setup.readable]},
    )
    chunks = list(stream)  # ends at data: [DONE], or raises on an error event
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(chunk.object == "chat.completion.chunk" and chunk.id == chunks[0].id for chunk in chunks)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    final = chunks[-1]
    assert final.choices[0].finish_reason == "stop"
    assert [chunk.choices[0].finish_reason for chunk in chunks[:-1]] == [None] * (len(chunks) - 1)
    assert final.usage is not None and final.usage.completion_tokens > 0
    citations = (final.model_extra or {})["citations"]
    assert text.strip() and citations["answer"].strip()
    if not citations["replace"]:
        assert text == citations["answer"]
    assert [source["document"] for source in citations["sources"]] == ["moss/society.txt"]
    assert all("citations" not in (chunk.model_extra or {}) for chunk in chunks[:-1])


def test_a_collection_the_user_cannot_read_answers_like_a_missing_one(setup: Setup) -> None:
    unreadable = ask(setup, [setup.unreadable]).to_dict()
    missing = ask(setup, [f"missing-{uuid.uuid4().hex[:8]}"]).to_dict()
    for response in (unreadable, missing):
        del response["id"], response["created"], response["citations"]["answer_id"]
    assert unreadable == missing
    assert missing["citations"]["sources"] == [] and missing["choices"][0]["message"]["content"]


def test_a_wrong_key_and_an_unknown_model_are_refused(setup: Setup) -> None:
    with pytest.raises(openai.AuthenticationError) as wrong:
        client(setup, key="rkg_aaaaaaaaaaaa_" + "x" * 43).models.list()
    assert wrong.value.status_code == 401 and wrong.value.code == "invalid_api_key"
    with pytest.raises(openai.NotFoundError) as unknown:
        ask(setup, [setup.readable], model="gpt-4o")
    assert unknown.value.code == "model_not_found" and unknown.value.param == "model"
    with pytest.raises(openai.BadRequestError) as bad:
        client(setup).chat.completions.create(model="ragkg", messages=[{"role": "tool", "content": "x"}])  # type: ignore[list-item, misc]
    assert bad.value.param == "messages[0].role"
