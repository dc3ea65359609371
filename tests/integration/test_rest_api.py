"""The REST API from a script's side, against the real stack (web server, Celery workers, Neo4j, chain):
only an HTTP client and the OpenAPI document. Upload -> job done -> ask -> the answer's provenance ->
the proof of the document's change-log entry -> delete. (schemathesis fuzzes every operation:
tests/integration/test_schemathesis.py.)"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.conftest import web_server_running
from tests.support import api_user, manage

pytestmark = pytest.mark.integration

TEXT = (
    b"Marigold Fenwick founded the Lanternwick Observatory in 1902. "
    b"The observatory stands on Corvane Hill, above the town of Ashbury."
)


@pytest.fixture(scope="module")
def web(live_services: None) -> Iterator[str]:
    with web_server_running() as url:
        yield url


class Api:
    """A script's client: every call checked against the OpenAPI document's operations."""

    def __init__(self, web: str, key: str) -> None:
        self.base = f"{web}/api/v1"
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {key}"
        self.schema = requests.get(f"{self.base}/openapi.json", timeout=30).json()

    def call(self, method: str, path: str, expect: int, **kwargs: Any) -> Any:
        template = "/api/v1" + path.split("?")[0]
        documented = [
            p for p in self.schema["paths"] if _matches(p, template) and method.lower() in self.schema["paths"][p]
        ]
        assert documented, f"{method} {template} is not in the OpenAPI document"
        response = self.http.request(method, self.base + path, timeout=120, **kwargs)
        assert response.status_code == expect, f"{method} {path}: {response.status_code} {response.text[:800]}"
        return response.json()


def _matches(documented: str, actual: str) -> bool:
    left, right = documented.split("/"), actual.split("/")
    return len(left) == len(right) and all(a == b or a.startswith("{") for a, b in zip(left, right, strict=True))


def test_upload_ask_provenance_proof_delete(web: str) -> None:
    api = Api(web, api_user("curator,auditor").key)
    collection = f"rest-{uuid.uuid4().hex[:8]}"
    made = api.call("POST", "/collections", 201, json={"name": collection, "title": "Observatories"})
    assert made["owned"] is True and made["public"] is False
    job = api.call("POST", "/documents", 202, data={"collection": collection}, files=[("files", ("obs.txt", TEXT))])
    deadline = time.monotonic() + 240
    while job["state"] not in ("done", "failed"):
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
        job = api.call("GET", f"/jobs/{job['id']}", 200)
    assert job["state"] == "done", job
    document_id = job["results"][0]["document_id"]
    listed = api.call("GET", f"/documents?collection={collection}", 200)
    assert [item["id"] for item in listed["items"]] == [document_id]
    document = api.call("GET", f"/documents/{document_id}", 200)
    assert document["graph"]["chunks"] >= 1 and document["graph"]["entities_mentioned"] >= 2
    [ingested] = document["changes"]
    assert ingested["action"] == "document.ingested"

    answer = api.call(
        "POST", "/ask", 200, json={"question": "Who founded the Lanternwick Observatory?", "collections": [collection]}
    )
    assert answer["state"] == "done" and answer["answer"], answer
    assert {source["document_id"] for source in answer["sources"]} == {document_id}
    again = api.call("GET", f"/answers/{answer['answer_id']}", 200)
    assert again["answer"] == answer["answer"] and again["tokens"], "token provenance"
    for citation in again["citations"]:
        assert citation["document_id"] == document_id and citation["unit_id"]
        if citation["sentence"] is not None:
            assert citation["sentence"]["text"] and citation["sentence"]["text"] in TEXT.decode()

    anchored = manage("ledger", "anchor")
    assert anchored.returncode == 0, anchored.stdout + anchored.stderr
    entry = api.call("GET", f"/changes/{ingested['seq']}", 200)
    assert entry["subject_id"] == f"{collection}/obs.txt" and entry["action"] == "document.ingested"
    proof = api.call("GET", f"/changes/{ingested['seq']}/proof", 200)
    assert proof["format"] == "ragkg-ledger-proof/1" and proof["leaf_index"] == ingested["seq"]
    assert proof["anchor"]["tx_hash"]

    preview = api.call("GET", f"/documents/{document_id}/deletion", 200)
    assert preview["removes"]["chunks"] == document["graph"]["chunks"]
    deleted = api.call("DELETE", f"/documents/{document_id}", 200)
    assert deleted["deleted"] is True and deleted["change_log_entry"] is not None
    api.call("GET", f"/documents/{document_id}", 404)
    assert api.call("GET", f"/documents?collection={collection}", 200)["count"] == 0


def test_keys_and_collections_a_script_cannot_use(web: str) -> None:
    outsider = Api(web, api_user("").key)
    outsider.call("GET", "/documents?collection=demo-private-none", 200)
    hidden = outsider.call(
        "POST", "/ask", 200, json={"question": "Who founded it?", "collections": ["nothing-here"], "generate": False}
    )
    assert hidden["sources"] == []
    wrong = requests.get(f"{web}/api/v1/collections", headers={"Authorization": "Bearer rkg_unknown"}, timeout=30)
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_api_key"
    revoked_key = api_user("").key
    key_id = revoked_key.split("_")[1]
    assert manage("apikeys", "revoke", key_id).returncode == 0
    gone = requests.get(f"{web}/api/v1/collections", headers={"Authorization": f"Bearer {revoked_key}"}, timeout=30)
    assert gone.status_code == 401
