"""Every URL of ragkg, walked as every persona, against the real Neo4j, FAISS indexes and models.

The URL patterns are read from the resolver (``django.urls.get_resolver()``, includes followed), so a
page added later without a row in ``GET_EXPECTED`` fails ``test_every_url_pattern_has_a_row``. Each
pattern's path converters are filled with the ids of a private collection's objects (its document,
chunk-bearing document, entity, image, answer, ingestion job, change-log entry), and every persona
GETs every URL: the status must be the table's. Patterns that take a POST are then posted, with a body
that would change something, by every persona that may not: the status must be the table's and the
graph and the database must be unchanged. ``/admin/`` is covered by a prefix rule (staff only).

Leak check: no response to a persona who cannot read the private collection (visitor, outsider, and
the curator and auditor, who hold roles but no grant) holds its marker word, its documents' titles,
paths or ids, its units' ids, the names or ids of the entities only it mentions, or its collection's
name, once what the request itself sent (its path, the question typed) is taken out. The search
page, the image search and ``POST /api/ask`` are asked about the private document as well.

Personas: visitor (anonymous), outsider (logged in, no role, no grant), member (viewer, reads the
private collection through a group grant), curator (staff and curator, no grant), auditor (no grant),
admin (superuser). How to extend the table: docs/access.md, "The URL walk".
"""

from __future__ import annotations

import hashlib
import html
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from neo4j import Driver
from PIL import Image
from pytest_django.fixtures import Settings

from apps.accounts.apikeys import key_create
from apps.accounts.models import ApiKey, Collection, CollectionGrant
from apps.accounts.roles import AUDITOR, CURATOR, VIEWER
from apps.accounts.services import collection_grant, group_member_set, role_set
from apps.answers.models import Answer
from apps.ingest.jobs import job_claim, job_create, job_run
from apps.ingest.models import Document, IngestJob
from apps.ingest.services import default_extractor
from apps.ledger.anchoring import anchors_advance
from apps.ledger.models import ChangeEntry
from apps.vectors.registry import vector_registry_reset

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PUBLIC, PRIVATE = "commons", "hollowmere"
MARKER = "Quillfeather"
JOURNAL = "The Journal of Moss Studies is published by the Bryological Society of Wales."
ORCHIDS = "Gwendolyn Pryce grew orchids in her greenhouse at Aberystwyth."
MINUTES_PATH = "minutes/quillfeather-trust.txt"
MINUTES = (
    "Minutes of the Quillfeather Trust\n\n"
    "Ottoline Varga founded the Quillfeather Trust in Hollowmere in 1887. "
    "Ottoline Varga was the first warden of the Quillfeather Trust, and Bartholomew Quist kept its accounts."
)
PICTURE_PATH = "minutes/quillfeather-seal.png"
# Questions with none of the private traces in them (what a request sends is taken out of its answer).
QUESTIONS = ("Who founded the trust in 1887 and who kept its accounts?", "Who was the first warden?")

PERSONAS = ("visitor", "outsider", "member", "curator", "auditor", "admin")
UNGRANTED = ("visitor", "outsider", "curator", "auditor")  # leak-checked: none of them reads PRIVATE
NOT_WALKED = None  # a POST the persona may make (it would change things): not sent

# GET status per URL pattern name, in PERSONAS order, with the private collection's ids in the path.
# 302: to the login page (LOGIN_URL), or where MOVED says.
GET_EXPECTED: dict[str, tuple[int, ...]] = {
    # accounts
    "login": (200, 302, 302, 302, 302, 302),  # logged in: back to /
    "logout": (405, 405, 405, 405, 405, 405),  # a POST with its CSRF token
    # API keys: each user's own (the key in the path is the member's)
    "api-keys": (302, 200, 200, 200, 200, 200),
    "api-key-revoke": (405, 405, 405, 405, 405, 405),
    # the REST API: a key or a session; 401 without; what a caller cannot read is 404 like a missing thing
    "api-v1:openapi-json": (200, 200, 200, 200, 200, 200),
    "api-v1:openapi-view": (200, 200, 200, 200, 200, 200),
    "api-v1:api-root": (404, 404, 404, 404, 404, 404),
    "api-v1:collections_list": (401, 200, 200, 200, 200, 200),
    "api-v1:collection_create": (401, 200, 200, 200, 200, 200),  # the same path: GET lists
    "api-v1:grants_list": (401, 404, 403, 404, 404, 200),  # the member reads it but does not own it
    "api-v1:grant_add": (401, 404, 403, 404, 404, 200),
    "api-v1:grant_remove": (405, 405, 405, 405, 405, 405),  # DELETE only
    "api-v1:documents_list": (401, 200, 200, 200, 200, 200),
    "api-v1:documents_upload": (401, 200, 200, 200, 200, 200),
    "api-v1:document_get": (401, 404, 200, 404, 404, 200),
    "api-v1:document_remove": (401, 404, 200, 404, 404, 200),
    "api-v1:document_deletion_preview": (401, 404, 200, 404, 404, 200),
    "api-v1:job_get": (401, 404, 200, 404, 404, 200),
    "api-v1:job_retry_create": (405, 405, 405, 405, 405, 405),
    "api-v1:ask": (405, 405, 405, 405, 405, 405),
    "api-v1:answer_get": (401, 404, 200, 404, 404, 200),
    "api-v1:change_get": (401, 403, 403, 403, 404, 200),
    "api-v1:change_proof": (401, 403, 403, 403, 404, 200),
    # OpenAI-compatible chat and MCP: an API key only (a browser session gets 401)
    "openai-models": (401, 401, 401, 401, 401, 401),
    "openai-model": (401, 401, 401, 401, 401, 401),
    "openai-chat": (401, 401, 401, 401, 401, 401),
    "mcp": (401, 401, 401, 401, 401, 401),
    # health, metrics, the graph overview: open to everyone
    "healthz": (200, 200, 200, 200, 200, 200),
    "status": (200, 200, 200, 200, 200, 200),
    "metrics": (200, 200, 200, 200, 200, 200),
    "graph-overview": (200, 200, 200, 200, 200, 200),
    # the graph explorer's JSON: an entity only for readers of a unit that mentions it; an answer as on its page
    "graph-search": (200, 200, 200, 200, 200, 200),
    "graph-neighbourhood": (404, 404, 200, 404, 404, 200),
    "graph-entity-units": (404, 404, 200, 404, 404, 200),
    "graph-answer": (404, 404, 200, 404, 404, 200),
    # the former staff ingestion pages: to their curation pages (which check access)
    "ingest-jobs": (302, 302, 302, 302, 302, 302),
    "ingest-job": (302, 302, 302, 302, 302, 302),
    # search, the API, answers (an answer is its asker's, here the member's), image files
    "home": (200, 200, 200, 200, 200, 200),
    "search": (200, 200, 200, 200, 200, 200),
    "api-ask": (405, 405, 405, 405, 405, 405),
    "answer": (404, 404, 200, 404, 404, 200),
    "answer-stream": (404, 404, 200, 404, 404, 200),
    "answer-feedback": (405, 405, 405, 405, 405, 405),  # a POST
    "answer-stop": (405, 405, 405, 405, 405, 405),  # a POST
    # the document viewer: readers of the document's collection; the minutes are no PDF (no page pictures)
    "document": (404, 404, 200, 404, 404, 200),
    "document-page": (404, 404, 404, 404, 404, 404),
    "history": (302, 200, 200, 200, 200, 200),
    "image-file": (404, 404, 200, 404, 404, 200),
    # the answers' audit pages: auditors; an answer only when every collection it drew on is readable
    "provenance:answers": (302, 403, 403, 403, 200, 200),
    "provenance:answer": (302, 403, 403, 403, 404, 200),
    "provenance:exact": (302, 403, 403, 403, 405, 405),
    "provenance:exact-status": (302, 403, 403, 403, 404, 200),
    "provenance:exact-cancel": (302, 403, 403, 403, 405, 405),
    "provenance:export": (302, 403, 403, 403, 404, 200),
    # the change log: auditors; a Document entry only for readers of its collection
    "ledger:log": (302, 403, 403, 403, 200, 200),
    "ledger:verify": (302, 403, 403, 403, 405, 405),
    "ledger:entry": (302, 403, 403, 403, 404, 200),
    "ledger:proof": (302, 403, 403, 403, 404, 200),
    "ledger:anchors": (302, 403, 403, 403, 200, 200),
    # curation: curators; an entity, document or job only when the curator can read it
    "curation:index": (302, 403, 403, 200, 403, 200),
    "curation:entities": (302, 403, 403, 200, 403, 200),
    "curation:suggestions": (302, 403, 403, 200, 403, 200),
    "curation:suggestion-merge": (302, 403, 403, 405, 403, 405),
    "curation:suggestion-dismiss": (302, 403, 403, 405, 403, 405),
    "curation:suggestion-restore": (302, 403, 403, 405, 403, 405),
    "curation:synonym-review": (302, 403, 403, 405, 403, 405),
    "curation:merge-undo": (302, 403, 403, 405, 403, 405),
    "curation:entity": (302, 403, 403, 404, 403, 200),
    "curation:entity-rename": (302, 403, 403, 405, 403, 405),
    "curation:entity-alias": (302, 403, 403, 405, 403, 405),
    "curation:entity-merge": (302, 403, 403, 405, 403, 405),
    "curation:entity-split": (302, 403, 403, 404, 403, 200),
    "curation:entity-delete": (302, 403, 403, 404, 403, 200),
    "curation:relations": (302, 403, 403, 200, 403, 200),
    "curation:relation-approve": (302, 403, 403, 405, 403, 405),
    "curation:relation-reject": (302, 403, 403, 405, 403, 405),
    "curation:relation-remove": (302, 403, 403, 405, 403, 405),
    "curation:relation-predicate": (302, 403, 403, 405, 403, 405),
    "curation:documents": (302, 403, 403, 200, 403, 200),
    "curation:document-upload": (302, 403, 403, 405, 403, 405),
    "curation:document-delete": (302, 403, 403, 404, 403, 200),
    "curation:jobs": (302, 403, 403, 200, 403, 200),
    "curation:feedback": (302, 403, 403, 200, 403, 200),
    "curation:job": (302, 403, 403, 404, 403, 200),
    "curation:job-retry": (302, 403, 403, 405, 403, 405),
}
MOVED = {"ingest-jobs": "/curation/documents/", "ingest-job": "/curation/jobs/"}  # where the redirects go

# Filters of the list pages that would find the private records, walked like their pattern.
SEARCHES: list[tuple[str, dict[str, str]]] = [
    ("curation:entities", {"q": MARKER}),
    ("curation:entities", {"q": "Ottoline"}),
    ("curation:relations", {"entity": "Ottoline Varga"}),
    ("curation:documents", {"text": "minutes", "collection": PRIVATE}),
    ("ledger:log", {"subject": PRIVATE}),
    ("provenance:answers", {"document": "minutes"}),
    ("provenance:answers", {"question": "trust"}),
    ("history", {"page": "1"}),
    ("graph-overview", {"q": "Ottoline"}),
    ("graph-overview", {"q": MARKER, "collections": PRIVATE}),
    ("graph-search", {"q": "Ottoline"}),
    ("graph-search", {"q": MARKER, "collections": PRIVATE}),
]

# POST status per pattern name and persona; NOT_WALKED where the persona may (and it would change
# things). Refused POSTs must leave the graph and the database exactly as they were.
POST_EXPECTED: dict[str, tuple[int | None, ...]] = {
    "api-ask": (200, 200, NOT_WALKED, 200, 200, NOT_WALKED),
    "home": (200, 200, NOT_WALKED, 200, 200, NOT_WALKED),
    "search": (200, 200, NOT_WALKED, 200, 200, NOT_WALKED),
    "answer-feedback": (404, 404, NOT_WALKED, 404, 404, NOT_WALKED),  # only who may open the answer
    "answer-stop": (404, 404, NOT_WALKED, 404, 404, NOT_WALKED),
    "ledger:verify": (302, 403, 403, 403, 200, 200),
    "provenance:exact": (302, 403, 403, 403, 404, NOT_WALKED),
    "provenance:exact-cancel": (302, 403, 403, 403, 404, NOT_WALKED),
    "curation:suggestion-merge": (302, 403, 403, 404, 403, NOT_WALKED),
    "curation:suggestion-dismiss": (302, 403, 403, 404, 403, NOT_WALKED),
    "curation:suggestion-restore": (302, 403, 403, NOT_WALKED, 403, NOT_WALKED),  # names nothing it could leak
    "curation:synonym-review": (302, 403, 403, 404, 403, NOT_WALKED),
    "curation:merge-undo": (302, 403, 403, 302, 403, NOT_WALKED),  # the walk's entry is no merge: refused
    "curation:entity-rename": (302, 403, 403, 404, 403, NOT_WALKED),
    "curation:entity-alias": (302, 403, 403, 404, 403, NOT_WALKED),
    "curation:entity-merge": (302, 403, 403, 404, 403, NOT_WALKED),
    "curation:entity-split": (302, 403, 403, 404, 403, NOT_WALKED),
    "curation:entity-delete": (302, 403, 403, 404, 403, NOT_WALKED),
    "curation:relation-approve": (302, 403, 403, 404, 403, NOT_WALKED),
    "curation:relation-reject": (302, 403, 403, 404, 403, NOT_WALKED),
    "curation:relation-remove": (302, 403, 403, 404, 403, NOT_WALKED),
    "curation:relation-predicate": (302, 403, 403, 404, 403, NOT_WALKED),
    "curation:document-upload": (302, 403, 403, 400, 403, NOT_WALKED),  # into a collection not theirs
    "curation:document-delete": (302, 403, 403, 404, 403, NOT_WALKED),
    "curation:job-retry": (302, 403, 403, 404, 403, NOT_WALKED),
    "ingest-jobs": (405, 405, 405, 405, 405, 405),  # an upload is refused there, never dropped by a redirect
    "api-key-revoke": (302, 302, NOT_WALKED, 302, 302, NOT_WALKED),  # someone else's key: refused
    "api-v1:collection_create": (401, 403, 403, NOT_WALKED, 403, NOT_WALKED),
    "api-v1:grant_add": (401, 404, 403, 404, 404, NOT_WALKED),
    "api-v1:documents_upload": (401, 403, 403, 409, 403, NOT_WALKED),  # into a collection not theirs: name taken
    "api-v1:job_retry_create": (401, 403, 403, 404, 403, NOT_WALKED),
    "api-v1:ask": (401, 200, NOT_WALKED, 200, 200, NOT_WALKED),
    "openai-chat": (401, 401, 401, 401, 401, 401),
    "mcp": (401, 401, 401, 401, 401, 401),
}
PUBLIC_POSTS = {"api-ask", "home", "search", "ledger:verify", "api-v1:ask"}  # answered: may record an answer
# DELETE per pattern name and persona, like POST_EXPECTED.
DELETE_EXPECTED: dict[str, tuple[int | None, ...]] = {
    "api-v1:document_remove": (401, 403, 403, 404, 403, NOT_WALKED),
    "api-v1:grant_remove": (401, 404, 403, 404, 404, NOT_WALKED),
}
# The same API with each persona's key instead of a session: the statuses of the session walk but for
# the key-only endpoints, which a key opens (GET on chat and MCP: they take POST).
KEY_PREFIXES = ("api-v1:", "openai-", "mcp", "api-key")
KEY_GET_CHANGES: dict[str, tuple[int, ...]] = {
    "openai-models": (401, 200, 200, 200, 200, 200),
    "openai-model": (401, 404, 404, 404, 404, 404),  # the walk's id is no model
    "openai-chat": (401, 405, 405, 405, 405, 405),
    "mcp": (401, 405, 405, 405, 405, 405),
}

ADMIN_PREFIX = "admin/"


@dataclass(frozen=True)
class Pattern:
    name: str  # namespaced ("curation:entity"), or the route when a pattern has no name
    route: str  # the whole route, includes' prefixes joined
    params: tuple[str, ...]


def url_patterns(
    resolvers: list[URLResolver | URLPattern] | None = None, prefix: str = "", space: str = ""
) -> Iterator[Pattern]:
    """Every URL pattern of the project, includes followed."""
    for entry in resolvers if resolvers is not None else get_resolver().url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            inner = f"{space}{entry.namespace}:" if entry.namespace else space
            yield from url_patterns(entry.url_patterns, route, inner)
        else:
            converters = getattr(entry.pattern, "converters", {})
            name = f"{space}{entry.name}" if entry.name else route
            yield Pattern(name=name, route=route, params=tuple(converters))


def app_patterns() -> list[Pattern]:
    """The patterns the table must cover: all but the admin's (a prefix rule)."""
    return [p for p in url_patterns() if not p.route.startswith(ADMIN_PREFIX)]


def test_every_url_pattern_has_a_row() -> None:
    """A new page fails here until GET_EXPECTED says who may open it."""
    names = [p.name for p in app_patterns()]
    assert len(names) == len(set(names)), "two patterns share a name"
    missing = sorted(set(names) - set(GET_EXPECTED))
    stale = sorted(set(GET_EXPECTED) - set(names))
    assert not missing, f"URL patterns without a row in GET_EXPECTED: {missing}"
    assert not stale, f"rows in GET_EXPECTED for patterns that no longer exist: {stale}"
    assert set(POST_EXPECTED) <= set(GET_EXPECTED)
    assert all(len(row) == len(PERSONAS) for row in [*GET_EXPECTED.values(), *POST_EXPECTED.values()])
    assert any(p.route.startswith(ADMIN_PREFIX) for p in url_patterns()), "the admin is mounted"


# --- the corpus ---------------------------------------------------------------------------------


@dataclass
class World:
    """The private collection's objects (the ids that fill the paths) and what must not leak."""

    ids: dict[str, str]
    relation: dict[str, str]
    second_entity: str
    traces: dict[str, str] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)  # persona: API key

    def leaks(self, body: str, *sent: str) -> list[str]:
        """The traces ``body`` holds once what the request sent (and the page echoes) is taken out."""
        for value in sorted({v for s in sent if s for v in echoes(s)}, key=len, reverse=True):
            body = body.replace(value, "")
        low = body.lower()
        return [name for name, trace in self.traces.items() if trace.lower() in low]


def echoes(sent: str) -> set[str]:
    """How a page may repeat what a request sent: as is, escaped, URL-quoted, in JSON; a path's
    segments too (an error may name the id or name the path gave: "The model 'x' does not exist")."""
    parts = [sent, *(segment for segment in sent.split("?")[0].split("/") if sent.startswith("/") and segment)]
    return {v for p in parts for v in (p, html.escape(p), quote(p), quote(p, safe=""), json.dumps(p)[1:-1])}


def png() -> bytes:
    data = io.BytesIO()
    Image.new("RGB", (64, 48), "purple").save(data, format="PNG")
    return data.getvalue()


def ingest(driver: Driver, collection: str, files: dict[str, bytes], **options: Any) -> IngestJob:
    """A job created as the upload page creates it, run here (the real worker has its own database)."""
    job = job_create(collection=collection, uploads=list(files.items()), enqueue=False, **options)
    assert job_claim(job_id=str(job.id))
    done = job_run(job_id=str(job.id), driver=driver, extractor=default_extractor())
    assert done.state == IngestJob.DONE, done.error
    return done


@pytest.fixture(autouse=True)
def state_dirs(tmp_path: Path, settings: Settings) -> Iterator[None]:
    settings.VECTORS_DIR = tmp_path / "vectors"
    settings.MEDIA_ROOT = tmp_path / "media"
    vector_registry_reset()
    yield
    vector_registry_reset()


@pytest.fixture
def people() -> dict[str, User]:
    people = {
        "outsider": User.objects.create_user("outsider"),
        "member": User.objects.create_user("member"),
        "curator": User.objects.create_user("curator", is_staff=True),
        "auditor": User.objects.create_user("auditor"),
        "admin": User.objects.create_superuser("root"),
    }
    role_set(username="member", role=VIEWER)
    role_set(username="curator", role=CURATOR)
    role_set(username="auditor", role=AUDITOR)
    return people


def query(driver: Driver, cypher: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = driver.execute_query(cypher, **params)
    return [dict(record) for record in records]


@pytest.fixture
def world(empty_graph: Driver, people: dict[str, User]) -> World:
    ingest(empty_graph, PUBLIC, {"journal.txt": JOURNAL.encode(), "orchids.txt": ORCHIDS.encode()}, public=True)
    job = ingest(empty_graph, PRIVATE, {MINUTES_PATH: MINUTES.encode(), PICTURE_PATH: png()})
    collection_grant(collection=PRIVATE, group="team")
    group_member_set(username="member", group="team")
    minutes = Document.objects.get(collection=PRIVATE, path=MINUTES_PATH)
    picture = Document.objects.get(collection=PRIVATE, path=PICTURE_PATH)
    [image] = query(empty_graph, "MATCH (:Document {id: $id})-[:HAS_IMAGE]->(i:Image) RETURN i.id AS id", id=picture.id)
    units = query(empty_graph, "MATCH (u) WHERE u.document_id IN $ids RETURN u.id AS id", ids=[minutes.id, picture.id])
    # The entities only the private documents mention (their names and ids must stay private).
    only_private = query(
        empty_graph,
        """
        MATCH (e:Entity)<-[:MENTIONS]-(u)
        WITH e, collect(DISTINCT u.document_id) AS documents
        WHERE all(d IN documents WHERE d IN $ids)
        RETURN e.id AS id, e.name AS name ORDER BY e.name
        """,
        ids=[minutes.id, picture.id],
    )
    assert len(only_private) >= 2, only_private
    [relation] = query(
        empty_graph,
        """
        MATCH (a:Entity)-[r:RELATED]->(b:Entity)
        WHERE all(d IN COLLECT { MATCH (a)-[ev:EVIDENCE {predicate: r.predicate}]->(b) RETURN ev.document }
                  WHERE d = $id)
        RETURN a.id AS source, r.predicate AS predicate, b.id AS target LIMIT 1
        """,
        id=minutes.id,
    )
    member = Client()
    member.force_login(people["member"])
    asked = member.post("/api/ask", json.dumps({"question": QUESTIONS[0], "generate": False}), "application/json")
    answer = Answer.objects.get(id=asked.json()["answer_id"])
    assert minutes.id in {source["document_id"] for source in asked.json()["sources"]}
    entry = ChangeEntry.objects.get(subject_id=f"{PRIVATE}/{MINUTES_PATH}")
    assert anchors_advance().confirmed, "the proof page needs the entry anchored"
    world = World(
        ids={
            "answer_id": str(answer.id),
            "document_id": minutes.id,
            "entity_id": only_private[0]["id"],
            "job_id": str(job.id),
            "seq": str(entry.seq),
            "image_id": image["id"],
            "variant": "thumb",
            "name": PRIVATE,
            "grant_id": str(CollectionGrant.objects.get(collection_id=PRIVATE, group__name="team").pk),
            "model_id": PRIVATE,
            "number": "1",
            "key_id": "",
        },
        relation={k: str(v) for k, v in relation.items()},
        second_entity=only_private[1]["id"],
    )
    made = {persona: key_create(user=user, name="walk") for persona, user in people.items()}
    world.keys = {persona: key.secret for persona, key in made.items()}
    world.ids["key_id"] = made["member"].key.key_id
    world.traces = {
        "marker": MARKER,
        "collection": PRIVATE,
        "minutes title": minutes.title,
        "minutes id": minutes.id,
        "picture title": picture.title,
        "picture id": picture.id,
        "image id": image["id"],
        "answer id": str(answer.id),
        "job id": str(job.id),
        **{f"unit {u['id']}": u["id"] for u in units},
        **{f"entity {e['name']}": e["name"] for e in only_private},
        **{f"entity id {e['name']}": e["id"] for e in only_private},
    }
    return world


# --- the walk -----------------------------------------------------------------------------------


def client(people: dict[str, User], persona: str) -> Client:
    browser = Client()
    if persona != "visitor":
        browser.force_login(people[persona])
    return browser


def body_of(response: Any) -> str:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode(errors="replace")


def url_for(pattern: Pattern, ids: dict[str, str]) -> str:
    unknown = [param for param in pattern.params if param not in ids]
    assert not unknown, f"{pattern.name}: no fixture id for {unknown} (add one to World.ids)"
    return reverse(pattern.name, kwargs={param: ids[param] for param in pattern.params})


def redirect_ok(name: str, persona: str, response: Any) -> bool:
    location = str(response.get("Location", ""))
    if name == "login":
        return location == "/"
    if name == "api-key-revoke" and persona != "visitor":
        return location == reverse("api-keys")
    if name == "curation:merge-undo" and persona == "curator":  # refused with a message
        return location == reverse("curation:entities")
    if name in MOVED:
        return location.startswith(MOVED[name])
    return location.startswith("/accounts/login/")


def state(driver: Driver) -> str:
    """A digest of everything a refused POST could have changed: the graph and the records."""
    graph = query(
        driver,
        """
        MATCH (n) OPTIONAL MATCH (n)-[r]->(m)
        WITH n, collect([type(r), m.id, r.status, r.predicate]) AS out
        RETURN n.id AS id, labels(n) AS labels, n.name AS name, n.aliases AS aliases, out ORDER BY id
        """,
    )
    records = [
        list(ChangeEntry.objects.values_list("seq", "subject_id").order_by("seq")),
        list(IngestJob.objects.values_list("id", "state").order_by("id")),
        list(Document.objects.values_list("id", flat=True).order_by("id")),
        list(Collection.objects.values_list("name", "public").order_by("name")),
        list(CollectionGrant.objects.values_list("collection_id", "user_id", "group_id").order_by("pk")),
        list(ApiKey.objects.values_list("key_id", "revoked_at").order_by("key_id")),
    ]
    return hashlib.sha256(json.dumps([graph, records], default=str, sort_keys=True).encode()).hexdigest()


def post_body(name: str, world: World) -> dict[str, Any] | str:
    """A POST that would change something (or find the private document) were it allowed."""
    entity, other = world.ids["entity_id"], world.second_entity
    bodies: dict[str, dict[str, Any] | str] = {
        "api-ask": json.dumps({"question": QUESTIONS[0], "collections": [PUBLIC, PRIVATE], "generate": False}),
        "home": {"question": QUESTIONS[1], "collection": PRIVATE, "evidence_only": "on"},
        "search": {"question": QUESTIONS[0], "evidence_only": "on"},
        "ledger:verify": {"graph": "on"},
        "provenance:exact": {},
        "provenance:exact-cancel": {},
        "curation:suggestion-merge": {"first": entity, "second": other},
        "curation:suggestion-dismiss": {"first": entity, "second": other},
        "curation:suggestion-restore": {"first": entity, "second": other},
        "curation:synonym-review": {"source": entity, "target": other, "decision": "reject"},
        "curation:merge-undo": {},
        "curation:entity-rename": {"name": "Renamed"},
        "curation:entity-alias": {"alias": "Another name"},
        "curation:entity-merge": {"keep": entity, "drop": other},
        "curation:entity-split": {"name": "Split off", "documents": [world.ids["document_id"]]},
        "curation:entity-delete": {},
        "curation:relation-approve": world.relation,
        "curation:relation-reject": world.relation,
        "curation:relation-remove": world.relation,
        "curation:relation-predicate": {**world.relation, "new_predicate": "renamed"},
        "curation:document-upload": {"collection": PRIVATE, "files": SimpleUploadedFile("x.txt", b"Planted text.")},
        "curation:document-delete": {},
        "curation:job-retry": {},
        "ingest-jobs": {"collection": PRIVATE, "files": SimpleUploadedFile("y.txt", b"Planted text.")},
        "api-key-revoke": {},
        "answer-feedback": {"vote": "down", "note": "planted"},
        "answer-stop": {},
        "api-v1:collection_create": json.dumps({"name": "planted", "public": True}),
        "api-v1:grant_add": json.dumps({"user": "outsider"}),
        "api-v1:documents_upload": {"collection": PRIVATE, "files": SimpleUploadedFile("z.txt", b"Planted text.")},
        "api-v1:job_retry_create": json.dumps({}),
        "api-v1:ask": json.dumps({"question": QUESTIONS[0], "collections": [PUBLIC, PRIVATE], "generate": False}),
        "openai-chat": json.dumps(
            {"model": "ragkg", "messages": [{"role": "user", "content": QUESTIONS[0]}], "collections": [PRIVATE]}
        ),
        "mcp": json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": QUESTIONS[0], "collections": [PRIVATE]}},
            }
        ),
    }
    return bodies[name]


def sent_values(data: dict[str, Any] | str) -> list[str]:
    """The strings a POST sent (a page may show them back: the question, the collection typed)."""
    values = json.loads(data) if isinstance(data, str) else data
    flat: list[str] = []
    for value in values.values():
        flat += [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return flat


@dataclass
class Tally:
    requests: int = 0
    leak_checked: int = 0
    failures: list[str] = field(default_factory=list)
    seen_by_member: set[str] = field(default_factory=set)

    def check(self, ok: bool, text: str) -> None:
        if not ok:
            self.failures.append(text)


def test_every_url_as_every_persona(
    world: World, people: dict[str, User], empty_graph: Driver, record_property: Callable[[str, object], None]
) -> None:
    patterns = {p.name: p for p in app_patterns()}
    urls = {name: url_for(pattern, world.ids) for name, pattern in patterns.items()}
    tally = Tally()
    # A search that would surface the private image, as a GET of the search's image mode.
    image_search = ("home", {"question": "a purple seal", "images": "on"})
    for index, persona in enumerate(PERSONAS):
        browser = client(people, persona)
        walk: list[tuple[str, str, dict[str, str]]] = [(name, urls[name], {}) for name in sorted(urls)]
        walk += [(name, urls[name], params) for name, params in SEARCHES]
        # the explorer's page opened on the private entity and on the member's answer
        walk += [
            ("graph-overview", urls["graph-overview"], {key: world.ids[f"{key}_id"]}) for key in ("entity", "answer")
        ]
        for name, url, params in walk:
            expected = GET_EXPECTED[name][index]
            response = browser.get(url, params)
            body = body_of(response)
            tally.requests += 1
            where = f"GET {url} {params or ''} as {persona}"
            tally.check(response.status_code == expected, f"{where}: {response.status_code}, expected {expected}")
            if response.status_code == 302:
                tally.check(redirect_ok(name, persona, response), f"{where}: redirected to {response['Location']}")
            if persona == "member":  # the traces are real: the member reads them
                tally.seen_by_member.update(world.leaks(body))
            if persona in UNGRANTED:
                tally.leak_checked += 1
                leaks = world.leaks(body, url, *params.values())
                tally.check(not leaks, f"{where}: leaks {leaks}")
        for name, row in POST_EXPECTED.items():
            expected_post = row[index]
            if expected_post is None:
                continue
            before = state(empty_graph)
            data = post_body(name, world)
            if isinstance(data, str):
                response = browser.post(urls[name], data, content_type="application/json")
            else:
                response = browser.post(urls[name], data)
            body = body_of(response)
            tally.requests += 1
            where = f"POST {urls[name]} as {persona}"
            tally.check(
                response.status_code == expected_post, f"{where}: {response.status_code}, expected {expected_post}"
            )
            if response.status_code == 302:
                tally.check(redirect_ok(name, persona, response), f"{where}: redirected to {response['Location']}")
            if name not in PUBLIC_POSTS:
                tally.check(state(empty_graph) == before, f"{where}: changed the graph or the records")
            if persona in UNGRANTED:
                tally.leak_checked += 1
                leaks = world.leaks(body, urls[name], *sent_values(data))
                tally.check(not leaks, f"{where}: leaks {leaks}")
        for name, row in DELETE_EXPECTED.items():
            expected_delete = row[index]
            if expected_delete is not None:
                refused_delete(browser, persona, urls[name], expected_delete, tally, world, empty_graph)
        if persona != "visitor":
            key_walk(
                Client(HTTP_AUTHORIZATION=f"Bearer {world.keys[persona]}"),
                persona,
                index,
                urls,
                tally,
                world,
                empty_graph,
            )
        if persona in UNGRANTED:
            response = browser.get("/", image_search[1])
            tally.requests += 1
            tally.leak_checked += 1
            tally.check(not world.leaks(body_of(response)), f"image search as {persona}: leaks")
        tally.requests += admin_walk(browser, persona, tally, world)
    figures = (
        f"{len(patterns)} URL patterns (+ the admin prefix) x {len(PERSONAS)} personas = {tally.requests} requests "
        f"checked, {tally.leak_checked} of them leak-checked, {len(tally.failures)} failures"
    )
    record_property("url_walk", figures)
    assert tally.requests >= len(patterns) * len(PERSONAS), figures
    assert {"marker", "answer id"} <= tally.seen_by_member, tally.seen_by_member
    assert not tally.failures, "\n".join(tally.failures)


def refused_delete(
    browser: Client, persona: str, url: str, expected: int, tally: Tally, world: World, driver: Driver
) -> None:
    before = state(driver)
    response = browser.delete(url)
    tally.requests += 1
    where = f"DELETE {url} as {persona}" + (" (with a key)" if "HTTP_AUTHORIZATION" in browser.defaults else "")
    tally.check(response.status_code == expected, f"{where}: {response.status_code}, expected {expected}")
    tally.check(state(driver) == before, f"{where}: changed the graph or the records")
    if persona in UNGRANTED:
        tally.leak_checked += 1
        tally.check(not world.leaks(body_of(response), url), f"{where}: leaks")


def key_walk(
    keyed: Client, persona: str, index: int, urls: dict[str, str], tally: Tally, world: World, driver: Driver
) -> None:
    """The API as the persona's key: GETs, the refused writes, leak-checked like the session walk."""
    for name in sorted(n for n in urls if n.startswith(KEY_PREFIXES)):
        expected = KEY_GET_CHANGES.get(name, GET_EXPECTED[name])[index]
        response = keyed.get(urls[name])
        tally.requests += 1
        where = f"GET {urls[name]} with {persona}'s key"
        tally.check(response.status_code == expected, f"{where}: {response.status_code}, expected {expected}")
        if persona in UNGRANTED:
            tally.leak_checked += 1
            tally.check(not world.leaks(body_of(response), urls[name]), f"{where}: leaks")
    for name, row in POST_EXPECTED.items():
        if not name.startswith(("api-v1:",)) or row[index] is None:
            continue
        before = state(driver)
        data = post_body(name, world)
        if isinstance(data, str):
            response = keyed.post(urls[name], data, content_type="application/json")
        else:
            response = keyed.post(urls[name], data)
        tally.requests += 1
        where = f"POST {urls[name]} with {persona}'s key"
        tally.check(response.status_code == row[index], f"{where}: {response.status_code}, expected {row[index]}")
        if name not in PUBLIC_POSTS:
            tally.check(state(driver) == before, f"{where}: changed the graph or the records")
        if persona in UNGRANTED:
            tally.leak_checked += 1
            tally.check(not world.leaks(body_of(response), urls[name], *sent_values(data)), f"{where}: leaks")
    for name, row in DELETE_EXPECTED.items():
        expected_delete = row[index]
        if expected_delete is not None:
            refused_delete(keyed, persona, urls[name], expected_delete, tally, world, driver)


ADMIN_URLS = ("/admin/", "/admin/accounts/collection/", "/admin/auth/user/")


def admin_walk(browser: Client, persona: str, tally: Tally, world: World) -> int:
    """The admin by its prefix: staff only (others to the admin's login), model pages need permissions."""
    pk = Collection.objects.get(name=PRIVATE).pk
    for url in (*ADMIN_URLS, f"/admin/accounts/collection/{pk}/change/"):
        response = browser.get(url)
        if persona == "admin":
            expected = 200
        elif persona == "curator":  # staff without model permissions: the index only
            expected = 200 if url == "/admin/" else 403
        else:
            expected = 302
        where = f"GET {url} as {persona}"
        tally.check(response.status_code == expected, f"{where}: {response.status_code}, expected {expected}")
        if expected == 302:
            tally.check(str(response["Location"]).startswith("/admin/login/"), f"{where}: {response['Location']}")
        if persona in UNGRANTED:
            tally.leak_checked += 1
            tally.check(not world.leaks(body_of(response), url), f"{where}: leaks")
    return len(ADMIN_URLS) + 1
