"""The REST API's answers to bodies it cannot take (400, 415), to grants of no one (404), and what its
OpenAPI document says beyond the views: the answers every operation can give, the streamed ask."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from neo4j.exceptions import ServiceUnavailable

from apps.accounts.models import Collection
from apps.accounts.services import collection_ensure
from apps.answers.models import Answer
from apps.api import routes_library
from apps.ingest.models import Document
from tests.unit.api.conftest import bearer, keyed

pytestmark = pytest.mark.django_db


@pytest.fixture
def curator() -> dict[str, Any]:
    _user, key = keyed("cora", "curator")
    return bearer(key)


def _error(response: Any, status: int, code: str) -> str:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["error"] == code, body
    return str(body["message"])


def test_a_multipart_body_without_a_boundary_is_400(curator: dict[str, Any]) -> None:
    refused = Client().post("/api/v1/documents", b"x", content_type="multipart/form-data", **curator)
    assert "multipart" in _error(refused, 400, "invalid_request")


@pytest.mark.parametrize("content_type", ["application/json", "application/x-www-form-urlencoded", "text/plain"])
def test_an_upload_in_another_media_type_is_415(curator: dict[str, Any], content_type: str) -> None:
    refused = Client().post("/api/v1/documents", b"collection=x", content_type=content_type, **curator)
    assert "multipart/form-data" in _error(refused, 415, "unsupported_media_type")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
def test_a_json_operation_takes_only_json(curator: dict[str, Any], content_type: str) -> None:
    refused = Client().post("/api/v1/collections", b'{"name": "n"}', content_type=content_type, **curator)
    assert "application/json" in _error(refused, 415, "unsupported_media_type")
    json_utf8 = "application/json; charset=utf-8"
    made = Client().post("/api/v1/collections", b'{"name": "n"}', content_type=json_utf8, **curator)
    assert made.status_code == 201


@pytest.mark.parametrize(
    "body",
    [
        b'{"name": "\\ud800"}',
        b'{"name": "\xff"}',
        b"[[[",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"name": "x", "public": 1}',
        b'{"name": "a/b"}',
    ],
    ids=["lone surrogate", "not UTF-8", "cut short", "nested too deep", "public: 1", "a slash"],
)
def test_bodies_that_are_not_valid_json_or_not_text_are_400(curator: dict[str, Any], body: bytes) -> None:
    refused = Client().post("/api/v1/collections", body, content_type="application/json", **curator)
    _error(refused, 400, "invalid_request")
    assert not Collection.objects.exists()


def test_a_blank_question_is_400_in_words(curator: dict[str, Any]) -> None:
    refused = Client().post("/api/v1/ask", {"question": " \u3000 "}, content_type="application/json", **curator)
    assert _error(refused, 400, "invalid_request") == "question: must hold more than whitespace, and no NUL characters"
    assert not Answer.objects.exists()


def test_too_many_files_are_an_invalid_files_field(curator: dict[str, Any], settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2
    files = [SimpleUploadedFile(f"{n}.txt", b"text") for n in range(3)]
    refused = Client().post("/api/v1/documents", {"collection": "c", "files": files}, **curator)
    assert _error(refused, 400, "invalid_request").startswith("files: at most 2 files")


def test_an_upload_into_a_name_someone_else_holds_is_409(curator: dict[str, Any]) -> None:
    collection_ensure(name="theirs")
    refused = Client().post(
        "/api/v1/documents", {"collection": "theirs", "files": [SimpleUploadedFile("a.txt", b"text")]}, **curator
    )
    _error(refused, 409, "conflict")


def test_grants_to_no_one_are_404(curator: dict[str, Any]) -> None:
    owner = keyed("olga", "curator")
    collection_ensure(name="mine", owner=owner[0])
    owner_key = bearer(owner[1])
    client = Client()
    unknown = client.post(
        "/api/v1/collections/mine/grants", {"user": "nobody"}, content_type="application/json", **owner_key
    )
    assert "nobody" in _error(unknown, 404, "not_found")
    for grant_id in ("1", "-1", str(2**70)):
        _error(client.delete(f"/api/v1/collections/mine/grants/{grant_id}", **owner_key), 404, "not_found")
    assert client.delete("/api/v1/collections/mine/grants?user=nobody", **owner_key).status_code == 405


def test_a_service_down_is_503_unavailable_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def down() -> None:
        raise ServiceUnavailable("connection refused")

    _user, key = keyed("ann", reads=("shared",))
    document = Document.objects.create(
        id="d" * 32, collection="shared", path="a.txt", title="a", mime="text/plain", sha256="0" * 64, size=1
    )
    monkeypatch.setattr(routes_library, "get_driver", down)
    refused = Client().get(f"/api/v1/documents/{document.id}", **bearer(key))
    _error(refused, 503, "unavailable")
    assert refused.json()["stage"] == "neo4j" and refused["Retry-After"] == "10"


def _document() -> dict[str, Any]:
    document: dict[str, Any] = Client().get("/api/v1/openapi.json").json()
    return document


def test_every_operation_documents_the_answers_it_can_give_before_or_around_it() -> None:
    document = _document()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            assert {"401", "429", "500", "503"} <= set(responses), (method, path)
            assert responses["401"]["headers"]["WWW-Authenticate"]["required"] is True
            assert "Retry-After" in responses["429"]["headers"]
            if "requestBody" in operation:
                assert {"400", "413", "415"} <= set(responses), (method, path)


def test_the_streamed_ask_is_documented_as_ndjson_events() -> None:
    document = _document()
    ok = document["paths"]["/api/v1/ask"]["post"]["responses"]["200"]
    assert set(ok["content"]) == {"application/json", "application/x-ndjson"}
    events = ok["content"]["application/x-ndjson"]["schema"]
    assert set(events["discriminator"]["mapping"]) == {"retrieval", "token", "generated", "error", "done"}
    for name in ("AnswerEvent", "TokenEvent", "GeneratedEvent", "ErrorEvent"):
        assert name in document["components"]["schemas"]
    assert "ETag" in ok["headers"]
    upload = document["paths"]["/api/v1/documents"]["post"]["requestBody"]["content"]["multipart/form-data"]
    assert "application/pdf" in upload["encoding"]["files"]["contentType"]
