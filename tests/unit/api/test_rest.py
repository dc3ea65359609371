"""The REST API's contract without services: authentication, errors, collections and grants,
documents and jobs listings, answers' visibility, the change log's access rule, the OpenAPI document."""

from __future__ import annotations

import json
import uuid

import pytest
from django.contrib.auth.models import User
from django.test import Client

from apps.accounts.models import Collection, CollectionGrant
from apps.accounts.services import collection_ensure
from apps.answers.models import Answer
from apps.ingest.models import Document, IngestJob
from tests.unit.api.conftest import bearer, keyed

pytestmark = pytest.mark.django_db


def _document(collection: str, path: str) -> Document:
    return Document.objects.create(
        id=uuid.uuid4().hex, collection=collection, path=path, title=path, mime="text/plain", sha256="0" * 64, size=3
    )


def test_the_openapi_document_is_3_1_and_lists_every_operation() -> None:
    schema = Client().get("/api/v1/openapi.json").json()
    assert schema["openapi"].startswith("3.1")
    paths = set(schema["paths"])
    for path in (
        "/api/v1/collections",
        "/api/v1/collections/{name}/grants",
        "/api/v1/documents",
        "/api/v1/documents/{document_id}",
        "/api/v1/documents/{document_id}/deletion",
        "/api/v1/jobs/{job_id}",
        "/api/v1/jobs/{job_id}/retry",
        "/api/v1/ask",
        "/api/v1/answers/{answer_id}",
        "/api/v1/changes/{seq}",
        "/api/v1/changes/{seq}/proof",
    ):
        assert path in paths, path
    assert {"BearerKey", "Session"} <= set(schema["components"]["securitySchemes"])
    docs = Client().get("/api/v1/docs")
    assert docs.status_code == 200 and b"openapi.json" in docs.content and b"cdn." not in docs.content


def test_without_a_key_or_session_every_operation_is_401_json() -> None:
    refused = Client().get("/api/v1/collections")
    assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
    assert Client().post("/api/v1/ask", {"question": "x"}, content_type="application/json").status_code == 401


def test_bad_bodies_are_400_with_the_field_named_and_change_nothing() -> None:
    _user, key = keyed("cora", "curator")
    client = Client()
    broken = client.post("/api/v1/collections", "{not json", content_type="application/json", **bearer(key))
    assert broken.status_code == 400 and broken.json()["error"] == "invalid_request"
    missing = client.post("/api/v1/collections", {"title": "x"}, content_type="application/json", **bearer(key))
    assert missing.status_code == 400 and "name" in missing.json()["message"]
    typed = client.post(
        "/api/v1/ask", {"question": "q", "mode": "psychic"}, content_type="application/json", **bearer(key)
    )
    assert typed.status_code == 400 and "mode" in typed.json()["message"]
    slash = client.post("/api/v1/collections", {"name": "a/b"}, content_type="application/json", **bearer(key))
    assert slash.status_code == 400 and "name" in slash.json()["message"]
    assert not Collection.objects.filter(name__in=["a/b"]).exists() and not Answer.objects.exists()


def test_an_oversized_body_is_413(settings: object) -> None:
    _user, key = keyed("cora", "curator")
    body = json.dumps({"name": "big", "title": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10)})  # type: ignore[attr-defined]
    refused = Client().post("/api/v1/collections", body, content_type="application/json", **bearer(key))
    assert refused.status_code == 413 and refused.json()["error"] == "too_large"
    assert not Collection.objects.filter(name="big").exists()


def test_collections_list_only_what_the_key_reads_and_curators_create_their_own() -> None:
    collection_ensure(name="secret")
    user, key = keyed("cora", "curator", reads=("shared",))
    client = Client()
    names = [c["name"] for c in client.get("/api/v1/collections", **bearer(key)).json()]
    assert names == ["shared"]
    made = client.post(
        "/api/v1/collections", {"name": "mine", "public": False}, content_type="application/json", **bearer(key)
    )
    assert made.status_code == 201 and made.json()["owned"] is True
    assert Collection.objects.get(name="mine").owner == user
    taken = client.post("/api/v1/collections", {"name": "secret"}, content_type="application/json", **bearer(key))
    assert taken.status_code == 409
    _viewer, viewer_key = keyed("vic")
    assert (
        client.post(
            "/api/v1/collections", {"name": "v"}, content_type="application/json", **bearer(viewer_key)
        ).status_code
        == 403
    )


def test_a_collection_is_created_in_the_text_space_asked_for() -> None:
    _user, key = keyed("cora", "curator")
    client = Client()
    for name, space in (("wen", "mtext"), ("plain", "text"), ("later", "auto")):
        made = client.post(
            "/api/v1/collections", {"name": name, "space": space}, content_type="application/json", **bearer(key)
        )
        assert made.status_code == 201 and made.json()["space"] == (None if space == "auto" else space)
    listed = {c["name"]: c["space"] for c in client.get("/api/v1/collections", **bearer(key)).json()}
    assert listed == {"wen": "mtext", "plain": "text", "later": None}
    wrong = client.post(
        "/api/v1/collections", {"name": "x", "space": "klingon"}, content_type="application/json", **bearer(key)
    )
    assert wrong.status_code == 400 and "space" in wrong.json()["message"]
    assert not Collection.objects.filter(name="x").exists()


def test_owners_grant_and_revoke_others_see_missing_or_forbidden() -> None:
    owner, key = keyed("cora", "curator")
    collection_ensure(name="mine", owner=owner)
    User.objects.create_user("dan")
    client = Client()
    given = client.post(
        "/api/v1/collections/mine/grants", {"user": "dan"}, content_type="application/json", **bearer(key)
    )
    assert (
        given.status_code == 200 and CollectionGrant.objects.filter(collection_id="mine", user__username="dan").exists()
    )
    grants = client.get("/api/v1/collections/mine/grants", **bearer(key)).json()
    assert [g["user"] for g in grants] == ["dan"]
    both = client.post(
        "/api/v1/collections/mine/grants", {"user": "dan", "group": "g"}, content_type="application/json", **bearer(key)
    )
    assert both.status_code == 400
    _dan_user, dan_key = keyed("dan2", reads=("mine",))
    assert client.get("/api/v1/collections/mine/grants", **bearer(dan_key)).status_code == 403
    _eve, eve_key = keyed("eve")
    hidden = client.get("/api/v1/collections/mine/grants", **bearer(eve_key))
    missing = client.get("/api/v1/collections/nothing/grants", **bearer(eve_key))
    assert hidden.status_code == missing.status_code == 404 and hidden.json() == missing.json()
    taken = client.delete(f"/api/v1/collections/mine/grants/{grants[0]['id']}", **bearer(key))
    assert taken.status_code == 200 and not CollectionGrant.objects.filter(user__username="dan").exists()
    again = client.delete(f"/api/v1/collections/mine/grants/{grants[0]['id']}", **bearer(key))
    assert again.status_code == 404 and again.json()["error"] == "not_found"


def test_documents_and_jobs_of_unreadable_collections_look_missing() -> None:
    _user, key = keyed("cora", reads=("shared",))
    seen = _document("shared", "a.txt")
    hidden = _document("secret", "b.txt")
    client = Client()
    page = client.get("/api/v1/documents?collection=shared&q=a.t", **bearer(key)).json()
    assert page["count"] == 1 and page["items"][0]["id"] == seen.id
    assert client.get("/api/v1/documents?collection=secret", **bearer(key)).json() == {"count": 0, "items": []}
    gone = client.get(f"/api/v1/documents/{hidden.id}", **bearer(key))
    absent = client.get("/api/v1/documents/nothing", **bearer(key))
    assert gone.status_code == absent.status_code == 404 and gone.json() == absent.json()
    job = IngestJob.objects.create(collection="shared", files=[{"name": "a.txt", "stored": "/nowhere"}], state="failed")
    secret_job = IngestJob.objects.create(collection="secret")
    shown = client.get(f"/api/v1/jobs/{job.id}", **bearer(key)).json()
    assert shown["state"] == "failed" and shown["files"][0]["name"] == "a.txt"
    assert client.get(f"/api/v1/jobs/{secret_job.id}", **bearer(key)).status_code == 404
    assert client.get("/api/v1/jobs/not-a-uuid", **bearer(key)).status_code == 404
    assert (
        client.post(f"/api/v1/jobs/{job.id}/retry", {}, content_type="application/json", **bearer(key)).status_code
        == 403
    )
    assert client.delete(f"/api/v1/documents/{seen.id}", **bearer(key)).status_code == 403
    assert Document.objects.filter(id=seen.id).exists()


def test_an_answer_is_its_askers_or_an_auditors_who_reads_its_collections() -> None:
    asker, asker_key = keyed("ann", reads=("shared",))
    _other, other_key = keyed("bob", reads=("shared",))
    _auditor, auditor_key = keyed("aud", "auditor", reads=("shared",))
    source = {
        "id": "c1",
        "number": 1,
        "kind": "chunk",
        "document": "a.txt",
        "document_id": "d1",
        "collection": "shared",
        "text": "Ada wrote it.",
        "score": 1.0,
        "paths": [],
    }
    answer = Answer.objects.create(
        question="who?",
        user=asker,
        state=Answer.DONE,
        answer="Ada [1].",
        sources=[source],
        citations=[{"start": 0, "end": 8, "sources": [1], "marker_start": 4, "marker_end": 8}],
    )
    client = Client()
    own = client.get(f"/api/v1/answers/{answer.id}", **bearer(asker_key))
    assert own.status_code == 200
    cited = own.json()["citations"]
    assert cited[0]["document"] == "a.txt" and cited[0]["unit_id"] == "c1" and cited[0]["answer_end"] == 8
    assert client.get(f"/api/v1/answers/{answer.id}", **bearer(auditor_key)).status_code == 200
    assert client.get(f"/api/v1/answers/{answer.id}", **bearer(other_key)).status_code == 404
    assert client.get(f"/api/v1/answers/{uuid.uuid4()}", **bearer(asker_key)).status_code == 404


def test_the_change_log_needs_the_auditor_role_and_missing_entries_are_404() -> None:
    _viewer, viewer_key = keyed("vic")
    _auditor, auditor_key = keyed("aud", "auditor")
    client = Client()
    refused = client.get("/api/v1/changes/0", **bearer(viewer_key))
    assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
    assert client.get("/api/v1/changes/999999", **bearer(auditor_key)).status_code == 404
    assert client.get("/api/v1/changes/999999/proof", **bearer(auditor_key)).status_code == 404


def test_unknown_paths_and_methods_are_json_errors_too() -> None:
    _user, key = keyed("cora")
    client = Client()
    missing = client.get("/api/v1/nothing-here", **bearer(key))
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    wrong = client.get("/api/v1/ask", **bearer(key))
    assert wrong.status_code == 405 and wrong.json()["error"] == "method_not_allowed" and "POST" in wrong["Allow"]
