"""The MCP server's tools with fake knowledge, driven by the SDK's own client: in process, and over ``/mcp``
(the Django view, its key check and the ASGI bridge) through an httpx2 transport that hands each request
to Django's test client. The real readers of a unit and of a proof, with their access rules; the stdio
command's user check. The integration suite (tests/integration/test_mcp.py) runs both transports against
the real stack."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.db import transaction
from django.test import Client as DjangoClient
from django.test import RequestFactory
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from apps.accounts.apikeys import key_create, key_revoke
from apps.accounts.models import CollectionGrant
from apps.accounts.services import collection_ensure
from apps.answers.models import Answer
from apps.answers.types import AnswerError
from apps.api import mcp_http, mcp_server
from apps.api.mcp_server import Knowledge, acting_as, proof_read, server_build, unit_read
from apps.core.admission import Busy
from apps.ledger.content import document_content
from apps.ledger.models import Anchor, ChangeEntry
from apps.ledger.services import Change, LedgerError, entries_append, tree_head

TOOLS = {"search", "ask", "get_source", "get_proof"}
URL = "http://testserver/mcp"


# --- fakes --------------------------------------------------------------------------------------


def source(number: int, collection: str = "notes") -> dict[str, Any]:
    text = f"Ada Lovelace wrote note {number}. It describes the engine."
    return {
        "number": number,
        "id": f"unit{number}",
        "kind": "chunk",
        "document": f"note{number}.txt",
        "document_id": f"doc{number}",
        "collection": collection,
        "text": text,
        "score": 1.0 / number,
        "paths": [{"nodes": ["q", f"unit{number}"], "relationships": ["MENTIONS"], "score": 0.5}],
    }


def answer_result(*, sources: int = 8, state: str = "done", error: str = "") -> dict[str, Any]:
    text = "Ada Lovelace wrote the notes [1]."
    return {
        "answer_id": "a1",
        "question": "Who wrote the notes?",
        "state": state,
        "answer": text,
        "not_found": state == "not_found",
        "reason": "The sources found do not cover the question." if state == "not_found" else "",
        "error": error,
        "sources": [source(n) for n in range(1, sources + 1)],
        "tokens": [{"start": 0, "sources": [{"number": 1, "sentence": 0, "start": 0, "end": 26, "score": 0.9}]}],
        "citations": [{"start": 0, "end": len(text), "sources": [1]}],
    }


@dataclass
class FakeKnowledge:
    """Canned answers; records who asked what."""

    result: dict[str, Any] = field(default_factory=answer_result)
    failure: Exception | None = None
    units: dict[str, dict[str, Any]] = field(default_factory=dict)
    asked: list[dict[str, Any]] = field(default_factory=list)

    def ask(
        self, *, user: AbstractBaseUser, question: str, collections: Sequence[str] | None, generate: bool
    ) -> dict[str, Any]:
        self.asked.append({"user": user, "question": question, "collections": collections, "generate": generate})
        if self.failure is not None:
            raise self.failure
        return self.result

    def unit(self, *, user: AbstractBaseUser, unit_id: str) -> dict[str, Any] | None:
        return self.units.get(unit_id)

    def proof(self, *, user: AbstractBaseUser, seq: int) -> dict[str, Any]:
        if seq != 3:
            raise LedgerError(f"there is no change-log entry #{seq}")
        return {"format": "ragkg-ledger-proof/1", "leaf_index": 3}

    def knowledge(self) -> Knowledge:
        return Knowledge(ask=self.ask, unit=self.unit, proof=self.proof)


@pytest.fixture
def fake() -> FakeKnowledge:
    return FakeKnowledge()


def sync[R](coroutine: Callable[[], Awaitable[R]]) -> R:
    """Run a client session the way the HTTP bridge runs the server: the ORM stays on this thread."""
    return async_to_sync(coroutine)()


def text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def call(knowledge: Knowledge, user: Any, name: str, arguments: dict[str, Any]) -> CallToolResult:
    async def run() -> CallToolResult:
        with acting_as(user):
            async with Client(server_build(knowledge)) as client:
                return await client.call_tool(name, arguments)

    return sync(run)


# --- the tools, in process ----------------------------------------------------------------------


def test_the_four_tools_and_their_arguments(fake: FakeKnowledge) -> None:
    async def run() -> Any:
        async with Client(server_build(fake.knowledge())) as client:
            return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in sync(run)}
    assert set(tools) == TOOLS
    search = tools["search"].input_schema["properties"]
    assert search["k"]["default"] == 5 and search["k"]["minimum"] == 1 and search["k"]["maximum"] == 20
    assert tools["search"].input_schema["required"] == ["query"]
    assert tools["ask"].input_schema["required"] == ["question"]
    assert tools["get_source"].input_schema["required"] == ["unit_id"]
    assert tools["get_proof"].input_schema["required"] == ["seq"]
    assert all(tool.annotations and tool.annotations.read_only_hint for tool in tools.values())


def test_search_retrieves_without_generating_and_keeps_the_k_best(fake: FakeKnowledge) -> None:
    user = object()
    result = call(fake.knowledge(), user, "search", {"query": "notes", "collections": ["notes"], "k": 2})
    assert not result.is_error
    assert fake.asked == [{"user": user, "question": "notes", "collections": ["notes"], "generate": False}]
    found = result.structured_content
    assert found is not None and found["query"] == "Who wrote the notes?"
    assert [hit["unit_id"] for hit in found["results"]] == ["unit1", "unit2"]
    first = found["results"][0]
    assert first["document"] == "note1.txt" and first["text"].startswith("Ada") and first["score"] == 1.0
    assert first["paths"][0]["relationships"] == ["MENTIONS"]
    default = call(fake.knowledge(), user, "search", {"query": "notes"}).structured_content
    assert default is not None and len(default["results"]) == 5
    assert fake.asked[-1]["collections"] is None


@pytest.mark.parametrize("k", [0, 21, "many"])
def test_search_refuses_a_k_out_of_bounds(fake: FakeKnowledge, k: object) -> None:
    result = call(fake.knowledge(), object(), "search", {"query": "notes", "k": k})
    assert result.is_error and "k" in text(result)
    assert fake.asked == []


def test_ask_gives_the_answer_with_its_citations(fake: FakeKnowledge) -> None:
    result = call(fake.knowledge(), object(), "ask", {"question": "Who wrote the notes?"})
    assert not result.is_error and fake.asked[0]["generate"] is True
    answer = result.structured_content
    assert answer is not None and answer["answer"] == "Ada Lovelace wrote the notes [1]."
    [citation] = answer["citations"]
    assert citation["document"] == "note1.txt" and citation["unit_id"] == "unit1"
    assert citation["sentence"]["text"] == "Ada Lovelace wrote note 1."
    assert len(answer["sources"]) == 8 and answer["not_found"] is False and answer["note"] == ""
    assert answer["state"] == "done" and answer["reason"] == ""


def test_ask_gives_not_found_as_an_answer_with_its_reason() -> None:
    fake = FakeKnowledge(result=answer_result(state="not_found"))
    result = call(fake.knowledge(), object(), "ask", {"question": "Who wrote the notes?"})
    answer = result.structured_content
    assert not result.is_error and answer is not None
    assert answer["state"] == "not_found" and answer["not_found"] is True
    assert answer["reason"] == "The sources found do not cover the question."


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        (AnswerError("The knowledge graph is not reachable.", stage="graph_expansion"), "graph is not reachable"),
        (Busy("The generation queue is full.", retry_after=10, reason="full"), "queue is full"),
    ],
)
def test_a_failure_the_user_is_told_about_is_a_tool_error(
    fake: FakeKnowledge, failure: Exception, message: str
) -> None:
    fake.failure = failure
    for name, arguments in (("ask", {"question": "q"}), ("search", {"query": "q"})):
        result = call(fake.knowledge(), object(), name, arguments)
        assert result.is_error and message in text(result)


def test_a_failed_answer_is_a_tool_error_with_its_reason(fake: FakeKnowledge) -> None:
    fake.result = answer_result(state=Answer.FAILED, error="No generation worker picked up the question.")
    result = call(fake.knowledge(), object(), "ask", {"question": "q"})
    assert result.is_error and "No generation worker picked up the question." in text(result)


def test_get_source_and_get_proof(fake: FakeKnowledge) -> None:
    fake.units["unit1"] = {"unit_id": "unit1", "text": "Ada.", "document": "note1.txt"}
    found = call(fake.knowledge(), object(), "get_source", {"unit_id": "unit1"})
    assert found.structured_content == fake.units["unit1"]
    missing = call(fake.knowledge(), object(), "get_source", {"unit_id": "unit9"})
    assert missing.is_error and "there is no source unit 'unit9'" in text(missing)
    proof = call(fake.knowledge(), object(), "get_proof", {"seq": 3})
    assert proof.structured_content == {"format": "ragkg-ledger-proof/1", "leaf_index": 3}
    refused = call(fake.knowledge(), object(), "get_proof", {"seq": 4})
    assert refused.is_error and "there is no change-log entry #4" in text(refused)
    negative = call(fake.knowledge(), object(), "get_proof", {"seq": -1})
    assert negative.is_error


def test_an_unknown_tool_and_a_connection_without_a_user_are_errors(fake: FakeKnowledge) -> None:
    unknown = call(fake.knowledge(), object(), "delete_everything", {})
    assert unknown.is_error and text(unknown) == "Unknown tool: delete_everything"

    async def anonymous() -> CallToolResult:
        async with Client(server_build(fake.knowledge())) as client:
            return await client.call_tool("search", {"query": "notes"})

    result = sync(anonymous)
    assert result.is_error and "no user" in text(result) and fake.asked == []


# --- the real readers ---------------------------------------------------------------------------


@pytest.fixture
def people(db: None) -> dict[str, User]:
    """An owner of "notes", an auditor reading "notes" (not "vault"), an outsider, an admin."""
    owner = User.objects.create_user("olga")
    auditor = User.objects.create_user("audrey")
    auditor.groups.add(Group.objects.get_or_create(name="auditor")[0])
    collection_ensure(name="notes", owner=owner)
    collection_ensure(name="vault")
    CollectionGrant.objects.create(collection=collection_ensure(name="notes"), user=auditor)
    return {
        "owner": owner,
        "auditor": auditor,
        "outsider": User.objects.create_user("otto"),
        "admin": User.objects.create_superuser("root", password="x"),
    }


def test_a_unit_is_read_only_within_the_readers_collections(
    people: dict[str, User], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[list[str] | None] = []
    row = {
        "id": "unit1",
        "label": "Row",
        "text": "Ada",
        "path": None,
        "sentence_starts": [0],
        "sentence_ends": [3],
        "document_id": "doc1",
        "document": "people.csv",
        "collection": "notes",
    }

    def graph_read(driver: object, statement: str, *, ids: list[str], collections: list[str] | None) -> list[Any]:
        asked.append(collections)
        return [row] if collections is None or "notes" in collections else []

    monkeypatch.setattr(mcp_server, "graph_read_timed", graph_read)
    monkeypatch.setattr(mcp_server, "get_driver", lambda: None)
    assert unit_read(user=people["owner"], unit_id="unit1") == {
        "unit_id": "unit1",
        "unit_kind": "row",
        "text": "Ada",
        "sentences": [[0, 3]],
        "document": "people.csv",
        "document_id": "doc1",
        "collection": "notes",
    }
    assert unit_read(user=people["admin"], unit_id="unit1") is not None
    assert unit_read(user=people["outsider"], unit_id="unit1") is None  # reads nothing: not even asked
    assert unit_read(user=people["owner"], unit_id="x" * 500) is None
    assert asked == [["notes"], None]


def document_entry(collection: str) -> Change:
    document_id = ("a" if collection == "notes" else "b") * 32
    content = document_content(
        document={"id": document_id, "collection": collection, "path": "n.txt", "title": "N", "sha256": "1" * 64},
        units=[("c" * 32, "2" * 64)],
    )
    return Change("document.ingested", "Document", f"{collection}/n.txt", None, content, ref=document_id)


@pytest.fixture
def anchored_log(people: dict[str, User]) -> list[ChangeEntry]:
    """A Document entry in "notes", one in "vault", anchored (the anchor is only a row: no chain is asked)."""
    with transaction.atomic():
        rows = entries_append(actor="system:ingest", changes=[document_entry("notes"), document_entry("vault")])
    head = tree_head()
    Anchor.objects.create(
        tree_size=head.size,
        root=head.root,
        state=Anchor.CONFIRMED,
        chain_id=31337,
        contract="0x" + "ab" * 20,
        tx_hash="0x" + "cd" * 32,
        block_number=7,
        block_hash="0x" + "ef" * 32,
        confirmations=3,
    )
    return rows


def test_a_proof_follows_the_change_log_pages_rule(people: dict[str, User], anchored_log: list[ChangeEntry]) -> None:
    notes, vault = (row.seq for row in anchored_log)
    bundle = proof_read(user=people["auditor"], seq=notes)
    assert bundle["format"] == "ragkg-ledger-proof/1" and bundle["leaf_index"] == notes
    assert proof_read(user=people["admin"], seq=vault)["leaf_index"] == vault
    missing = f"there is no change-log entry #{vault + 1}"
    with pytest.raises(LedgerError, match=missing):
        proof_read(user=people["auditor"], seq=vault + 1)
    for user, seq in ((people["auditor"], vault), (people["owner"], notes), (people["outsider"], notes)):
        with pytest.raises(LedgerError) as refused:
            proof_read(user=user, seq=seq)
        assert str(refused.value) == f"there is no change-log entry #{seq}"  # exactly as for a missing one


# --- over /mcp ----------------------------------------------------------------------------------


@pytest.fixture
def served(fake: FakeKnowledge, monkeypatch: pytest.MonkeyPatch) -> FakeKnowledge:
    """/mcp serves the tools with fake knowledge."""
    monkeypatch.setattr(mcp_server, "_server", server_build(fake.knowledge()))
    return fake


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def django_transport(django: DjangoClient, statuses: list[int]) -> httpx2.MockTransport:
    """An httpx2 transport that hands every request to Django's test client (on the test's thread) and
    notes the status of each answer."""

    async def handle(request: httpx2.Request) -> httpx2.Response:
        headers = {name: value for name, value in request.headers.items() if name.lower() != "host"}
        content_type = headers.pop("content-type", "application/octet-stream")
        headers.pop("content-length", None)
        response = await sync_to_async(django.generic, thread_sensitive=True)(
            request.method, request.url.path, request.content, content_type, headers=headers
        )
        statuses.append(response.status_code)
        return httpx2.Response(response.status_code, headers=list(response.items()), content=response.content)

    return httpx2.MockTransport(handle)


def over_http[R](key: str, mode: str, work: Callable[[Client], Awaitable[R]], statuses: list[int] | None = None) -> R:
    """``work`` with an SDK client session on ``/mcp`` (``mode``: "auto" speaks 2026-07-28, "legacy" the
    initialize handshake), authenticated with ``key``."""

    async def run() -> R:
        transport = django_transport(DjangoClient(), [] if statuses is None else statuses)
        http = httpx2.AsyncClient(transport=transport, headers=bearer(key))
        async with http, Client(streamable_http_client(URL, http_client=http), mode=mode) as client:
            return await work(client)

    return sync(run)


@pytest.fixture
def key(people: dict[str, User]) -> str:
    return key_create(user=people["owner"], name="mcp").secret


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdk_client_over_http_acts_as_the_keys_user(
    served: FakeKnowledge, people: dict[str, User], key: str, mode: str
) -> None:
    async def work(client: Client) -> tuple[set[str], CallToolResult, CallToolResult]:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        found = await client.call_tool("search", {"query": "notes", "k": 1})
        return tools, found, await client.call_tool("no_such_tool", {})

    tools, found, unknown = over_http(key, mode, work)
    assert tools == TOOLS
    assert found.structured_content is not None and len(found.structured_content["results"]) == 1
    assert served.asked[0]["user"] == people["owner"] and served.asked[0]["generate"] is False
    assert unknown.is_error and text(unknown) == "Unknown tool: no_such_tool"


def test_without_a_valid_key_nothing_is_served_and_nothing_written(
    served: FakeKnowledge, people: dict[str, User], key: str
) -> None:
    call_body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask", "arguments": {}}}
    web = DjangoClient()
    bare = web.post("/mcp", call_body, content_type="application/json")
    assert bare.status_code == 401 and bare["WWW-Authenticate"].startswith("Bearer")
    assert bare.json()["error"] == "missing_api_key"
    wrong = web.post("/mcp", call_body, content_type="application/json", headers={"Authorization": "Bearer rkg_x"})
    assert wrong.status_code == 401
    session = DjangoClient()
    session.force_login(people["owner"])  # a browser session is not a key
    assert session.post("/mcp", call_body, content_type="application/json").status_code == 401
    revoked = key_create(user=people["owner"])
    key_revoke(key_id=revoked.key.key_id)
    gone = web.post("/mcp", call_body, content_type="application/json", headers=bearer(revoked.secret))
    assert gone.status_code == 401
    assert served.asked == [] and Answer.objects.count() == 0

    statuses: list[int] = []
    with pytest.raises(Exception) as failed:  # the SDK client cannot even connect
        over_http("rkg_unknown", "auto", lambda client: client.list_tools(), statuses)
    assert "Server returned an error response" in repr(failed.value)
    assert statuses == [401, 401]  # server/discover, then the initialize handshake it falls back to
    assert served.asked == []


def test_only_post_is_served(served: FakeKnowledge, key: str) -> None:
    web = DjangoClient()
    for method in ("get", "delete", "put"):
        response = getattr(web, method)("/mcp", headers=bearer(key))
        assert response.status_code == 405 and response["Allow"] == "POST"
    plain = web.post("/mcp", "{}", content_type="text/plain", headers=bearer(key))
    assert plain.status_code == 400  # the SDK's own check: JSON-RPC comes as application/json


def test_the_bridge_withholds_the_key_and_the_cookies_from_the_sdk(people: dict[str, User], key: str) -> None:
    made = RequestFactory().post(
        "/mcp", b"{}", content_type="application/json", headers={**bearer(key), "Cookie": "sessionid=s"}
    )
    scope = mcp_http.asgi_scope(made)
    names = {name for name, _ in scope["headers"]}
    assert b"content-type" in names and b"authorization" not in names and b"cookie" not in names
    assert scope["path"] == "/mcp" and scope["method"] == "POST"


# --- stdio ----------------------------------------------------------------------------------------


def test_the_stdio_command_needs_an_active_user(people: dict[str, User], monkeypatch: pytest.MonkeyPatch) -> None:
    served: list[AbstractBaseUser] = []
    monkeypatch.setattr("apps.api.management.commands.mcp.stdio_serve", lambda *, user: served.append(user))
    with pytest.raises(CommandError, match="no active user 'nobody'"):
        call_command("mcp", "--user", "nobody")
    people["outsider"].is_active = False
    people["outsider"].save()
    with pytest.raises(CommandError, match="no active user 'otto'"):
        call_command("mcp", "--user", "otto")
    call_command("mcp", "--user", "olga")
    assert served == [people["owner"]]
