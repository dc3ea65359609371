"""The MCP server against the real stack (web server, Celery worker, Neo4j, the chain), through the SDK's
own client over both transports: Streamable HTTP at /mcp with a bearer key, and stdio through
``manage.py mcp --user``.

One small document in the reader's private collection and a near copy in someone else's; the web server
and the worker use the real test database under var/test, so users, collections, the key and the anchor
are made through ``manage.py shell``, and the documents are ingested by the worker (an ingestion job, as
``manage.py ingest`` makes one)."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import requests
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from tests.conftest import web_server_running
from tests.support import BASE_DIR, manage

pytestmark = pytest.mark.integration

TEXT = "The Quillfeather Observatory on Skerrow Island was built in 1893 by the astronomer Maren Holt."
THEIR_TEXT = TEXT + " Its telescope was moved to Bergen in 1950."
QUESTION = "Who built the Quillfeather Observatory?"
TOOLS = {"search", "ask", "get_source", "get_proof"}
BUSY_WAIT_S = 180

# In the stack's database, in one process (each manage.py start costs seconds): the reader (an auditor) with
# their private collection, someone else's private collection, the document ingested into each by the
# worker, the reader's key, the documents' change-log entries, anchored so that their proofs exist.
SETUP_SCRIPT = """
import json, os
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from apps.accounts.apikeys import key_create
from apps.accounts.services import collection_ensure
from apps.graph.db import graph_read_timed
from apps.graph.driver import get_driver
from apps.ingest.jobs import job_create, job_wait
from apps.ledger.anchoring import anchors_advance
from apps.ledger.models import ChangeEntry
User = get_user_model()
reader = User.objects.create_user(os.environ["READER"])
reader.groups.add(Group.objects.get_or_create(name="auditor")[0])
collection_ensure(name=os.environ["MINE"], owner=reader)
collection_ensure(name=os.environ["THEIRS"], owner=User.objects.create_user(os.environ["OTHER"]))
documents = {}
for collection, name, text in ((os.environ["MINE"], "observatory.txt", os.environ["TEXT"]),
                               (os.environ["THEIRS"], "observatory-copy.txt", os.environ["THEIR_TEXT"])):
    job = job_wait(job_id=str(job_create(collection=collection, uploads=[(name, text.encode())]).id), timeout=240)
    [result] = job.results
    assert result["status"] == "created", job.results
    documents[collection] = result["document_id"]
units = graph_read_timed(get_driver(), "MATCH (:Document {id: $id})-[:HAS_CHUNK]->(c:Chunk) RETURN c.id AS id",
                   id=documents[os.environ["THEIRS"]])
entries = {name: ChangeEntry.objects.get(subject_kind="Document", subject_id__startswith=name + "/").seq
           for name in documents}
report = anchors_advance()
assert not report.errors, report.errors
print(json.dumps({"key": key_create(user=reader).secret, "documents": documents, "entries": entries,
                  "their_unit": units[0]["id"]}))
"""


@dataclass(frozen=True)
class Stack:
    web: str
    reader: str
    key: str
    mine: str
    theirs: str
    document_id: str
    their_unit: str
    seq: int
    their_seq: int


def ran(result: Any) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return str(result.stdout)


@pytest.fixture(scope="module")
def stack(live_services: None) -> Iterator[Stack]:
    tag = uuid.uuid4().hex[:8]
    names = {
        "READER": f"mcp-{tag}",
        "OTHER": f"mcp-other-{tag}",
        "MINE": f"mcp-mine-{tag}",
        "THEIRS": f"mcp-theirs-{tag}",
    }
    made = json.loads(
        ran(manage("shell", "-c", SETUP_SCRIPT, TEXT=TEXT, THEIR_TEXT=THEIR_TEXT, **names)).splitlines()[-1]
    )
    with web_server_running() as web:
        yield Stack(
            web=web,
            reader=names["READER"],
            key=made["key"],
            mine=names["MINE"],
            theirs=names["THEIRS"],
            document_id=made["documents"][names["MINE"]],
            their_unit=made["their_unit"],
            seq=made["entries"][names["MINE"]],
            their_seq=made["entries"][names["THEIRS"]],
        )


def over_http[R](stack: Stack, key: str, work: Callable[[Client], Awaitable[R]]) -> R:
    async def run() -> R:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(30, read=300))
        async with http, Client(streamable_http_client(f"{stack.web}/mcp", http_client=http)) as client:
            return await work(client)

    return anyio.run(run)


def text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def found(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def test_the_tools_over_streamable_http(stack: Stack) -> None:
    async def work(client: Client) -> dict[str, CallToolResult | set[str]]:
        call = client.call_tool
        return {
            "tools": {tool.name for tool in (await client.list_tools()).tools},
            "search": await call("search", {"query": QUESTION, "collections": [stack.mine], "k": 3}),
            "everywhere": await call("search", {"query": QUESTION}),
            "theirs": await call("search", {"query": QUESTION, "collections": [stack.theirs]}),
            "missing": await call("search", {"query": QUESTION, "collections": [f"no-such-{stack.mine}"]}),
            "their_unit": await call("get_source", {"unit_id": stack.their_unit}),
            "proof": await call("get_proof", {"seq": stack.seq}),
            "their_proof": await call("get_proof", {"seq": stack.their_seq}),
            "unknown": await call("drop_collection", {"name": stack.mine}),
        }

    results = over_http(stack, stack.key, work)
    assert results["tools"] == TOOLS
    search = results["search"]
    assert isinstance(search, CallToolResult)
    hits = found(search)["results"]
    assert 1 <= len(hits) <= 3
    best = hits[0]
    assert best["document"] == "observatory.txt" and best["document_id"] == stack.document_id
    assert best["collection"] == stack.mine and "Maren Holt" in best["text"] and best["score"] > 0
    everywhere = results["everywhere"]
    assert isinstance(everywhere, CallToolResult)
    assert {hit["collection"] for hit in found(everywhere)["results"]} == {stack.mine}  # never theirs

    theirs, missing = results["theirs"], results["missing"]
    assert isinstance(theirs, CallToolResult) and isinstance(missing, CallToolResult)
    assert found(theirs) == found(missing) == {"query": QUESTION, "results": []}
    assert text(theirs) == text(missing)

    unit = over_http(stack, stack.key, lambda client: client.call_tool("get_source", {"unit_id": best["unit_id"]}))
    source = found(unit)
    assert source["text"] == TEXT and source["document"] == "observatory.txt" and source["unit_kind"] == "chunk"
    their_unit = results["their_unit"]
    assert isinstance(their_unit, CallToolResult) and their_unit.is_error
    assert text(their_unit) == f"Error executing tool get_source: there is no source unit {stack.their_unit!r}"

    proof = results["proof"]
    assert isinstance(proof, CallToolResult)
    bundle = found(proof)
    assert bundle["format"] == "ragkg-ledger-proof/1" and bundle["leaf_index"] == stack.seq
    assert bundle["anchor"]["tx_hash"] and bundle["tree_size"] > stack.seq
    their_proof = results["their_proof"]
    assert isinstance(their_proof, CallToolResult) and their_proof.is_error
    assert text(their_proof) == f"Error executing tool get_proof: there is no change-log entry #{stack.their_seq}"

    unknown = results["unknown"]
    assert isinstance(unknown, CallToolResult) and unknown.is_error
    assert text(unknown) == "Unknown tool: drop_collection"


def ask_when_admitted(stack: Stack, question: str) -> CallToolResult:
    """Ask; while the generation worker is busy with other tests' answers (the stack is shared), ask again."""
    deadline = time.monotonic() + BUSY_WAIT_S
    while True:
        result = over_http(
            stack,
            stack.key,
            lambda client: client.call_tool("ask", {"question": question, "collections": [stack.mine]}),
        )
        if not (result.is_error and "busy" in text(result)) or time.monotonic() > deadline:
            return result
        time.sleep(10)


def test_ask_over_streamable_http_answers_with_citations(stack: Stack) -> None:
    answer = found(ask_when_admitted(stack, QUESTION))
    assert answer["answer"].strip() and answer["sources"]
    assert answer["citations"], answer
    for citation in answer["citations"]:
        assert citation["document"] == "observatory.txt" and citation["collection"] == stack.mine
        assert citation["sentence"] is None or citation["sentence"]["text"] in TEXT


def test_an_unknown_key_is_refused_with_401(stack: Stack) -> None:
    refused = requests.post(
        f"{stack.web}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": "Bearer rkg_aaaaaaaaaaaa_" + "b" * 43, "Accept": "application/json"},
        timeout=30,
    )
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Bearer")
    bare = requests.post(f"{stack.web}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=30)
    assert bare.status_code == 401
    with pytest.raises(Exception) as failed:  # the SDK client cannot even connect
        over_http(stack, "rkg_unknown", lambda client: client.list_tools())
    assert "Server returned an error response" in repr(failed.value)


def test_the_tools_over_stdio(stack: Stack, tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp", "--user", stack.reader], cwd=BASE_DIR, env=dict(os.environ)
    )
    log = tmp_path / "server.log"

    async def run() -> tuple[set[str], CallToolResult]:
        with log.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                tools = {tool.name for tool in (await client.list_tools()).tools}
                return tools, await client.call_tool("search", {"query": QUESTION, "k": 1})

    tools, search = anyio.run(run)
    assert tools == TOOLS, log.read_text()
    [hit] = found(search)["results"]
    assert hit["document_id"] == stack.document_id and hit["collection"] == stack.mine
