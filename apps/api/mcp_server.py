"""The MCP server: four tools over the knowledge base, built with the official ``mcp`` SDK (``MCPServer``).

Both transports serve this one server, as one user each: Streamable HTTP at ``/mcp`` acts as the bearer
key's user (apps/api/mcp_http.py), stdio (``manage.py mcp --user NAME``) as the named user. The transport
says who with ``acting_as``; the tools read the user from that context variable, so every tool runs with
exactly that user's collection access.

- ``search``: the ranked evidence for a query (retrieval only, no generation): document, unit, text,
  score and the graph paths that reached each unit.
- ``ask``: a generated answer with its citations (the supporting sentence of every ``[n]``) and sources.
- ``get_source``: one unit (chunk, table row or image) by id, with its text and its document.
- ``get_proof``: a change-log entry's proof bundle (``ragkg-ledger-proof/1``, docs/ledger.md).

What the user may not read looks exactly like what does not exist: a named collection they cannot read
is dropped like a missing one (``answer_scope``), a unit outside their collections is "no such unit",
and an entry they may not audit is "no such entry". A failure the user is told about (a busy queue, the
graph down, nothing found) is a tool result with ``isError`` and the plain message.

The tools are async (the SDK awaits them on its event loop); the Django ORM and the answering pipeline
are sync, so they run through ``sync_to_async(thread_sensitive=True)``: in the request's own thread
under the HTTP bridge, in one shared thread under stdio.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

import anyio
import neo4j.exceptions
from asgiref.sync import sync_to_async
from django.contrib.auth.base_user import AbstractBaseUser
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from apps.accounts.access import readable_collections
from apps.accounts.roles import can_audit
from apps.answers.models import Answer
from apps.answers.scope import answer_scope, scope_names
from apps.answers.services import GRAPH_DOWN
from apps.answers.types import KINDS, AnswerError
from apps.api import asking
from apps.api.evidence import citations_of, evidence_of
from apps.core.admission import Busy
from apps.graph import cypher
from apps.graph.db import graph_read_timed
from apps.graph.driver import get_driver
from apps.ledger.pages import entries_visible, entry_proof_bundle
from apps.ledger.services import LedgerError

logger = logging.getLogger(__name__)

NAME = "ragkg"
INSTRUCTIONS = (
    "ragkg answers questions from a knowledge graph of documents. Use `search` for the ranked evidence, "
    "`ask` for a generated answer with citations, `get_source` to read one cited unit in full, and "
    "`get_proof` for the Merkle proof of a change-log entry."
)
K_DEFAULT, K_MAX = 5, 20
MAX_UNIT_ID = 200
GRAPH_ERRORS = (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError)  # retrieval turns its own into AnswerError
NO_ENTRY = "there is no change-log entry #{seq}"  # the words of apps.ledger.proofs for a missing entry
NO_UNIT = "there is no source unit {unit_id!r}"

_acting: ContextVar[AbstractBaseUser | None] = ContextVar("ragkg_mcp_user", default=None)


@contextmanager
def acting_as(user: AbstractBaseUser) -> Iterator[None]:
    """Run the tools called inside this block (and the tasks started in it) as ``user``."""
    token = _acting.set(user)
    try:
        yield
    finally:
        _acting.reset(token)


def acting_user() -> AbstractBaseUser:
    user = _acting.get()
    if user is None:  # a transport that forgot acting_as: refuse rather than act as nobody
        raise ToolError("this MCP connection has no user")
    return user


# --- what the tools read ------------------------------------------------------------------------


class Ask(Protocol):
    def __call__(
        self, *, user: AbstractBaseUser, question: str, collections: Sequence[str] | None, generate: bool
    ) -> dict[str, Any]: ...


class UnitRead(Protocol):
    def __call__(self, *, user: AbstractBaseUser, unit_id: str) -> dict[str, Any] | None: ...


class ProofRead(Protocol):
    def __call__(self, *, user: AbstractBaseUser, seq: int) -> dict[str, Any]: ...


def unit_read(*, user: AbstractBaseUser, unit_id: str) -> dict[str, Any] | None:
    """One chunk, table row or image with its document, if ``user`` can read its collection (None otherwise,
    exactly as for a unit that does not exist: the collection filter is part of the graph query)."""
    scope = scope_names(answer_scope(user=user, requested=None))
    if not unit_id or len(unit_id) > MAX_UNIT_ID or scope == []:
        return None
    rows = graph_read_timed(get_driver(), cypher.ANSWER_UNITS, ids=[unit_id], collections=scope)
    if not rows:
        return None
    row = rows[0]
    starts, ends = row["sentence_starts"] or [], row["sentence_ends"] or []
    return {
        "unit_id": row["id"],
        "unit_kind": KINDS.get(row["label"], str(row["label"]).lower()),
        "text": row["text"] or "",
        "sentences": [[int(start), int(end)] for start, end in zip(starts, ends, strict=False)],
        "document": row["document"] or "",
        "document_id": row["document_id"],
        "collection": row["collection"] or "",
    }


def proof_read(*, user: AbstractBaseUser, seq: int) -> dict[str, Any]:
    """The entry's proof bundle under the change-log pages' rule (the auditor role, and a Document entry
    only for readers of its collection); LedgerError otherwise, worded as for a missing entry."""
    if not can_audit(user) or not entries_visible(readable_collections(user)).filter(seq=seq).exists():
        raise LedgerError(NO_ENTRY.format(seq=seq))
    return entry_proof_bundle(seq)


@dataclass(frozen=True)
class Knowledge:
    """What the tools read, as the acting user: the real readers, or deterministic fakes in unit tests."""

    ask: Ask
    unit: UnitRead
    proof: ProofRead


REAL = Knowledge(ask=asking.ask, unit=unit_read, proof=proof_read)


async def _in_thread[T](read: Callable[..., T], /, **kwargs: Any) -> T:
    """Run a sync reader off the event loop; the failures a user is told about become tool errors."""
    try:
        return await sync_to_async(read, thread_sensitive=True)(**kwargs)
    except (AnswerError, Busy) as exc:
        raise ToolError(exc.message) from exc
    except LedgerError as exc:
        raise ToolError(str(exc)) from exc
    except GRAPH_ERRORS as exc:
        logger.warning("MCP tool: the graph failed: %s", exc)
        raise ToolError(GRAPH_DOWN) from exc


# --- the tools ----------------------------------------------------------------------------------

Collections = Annotated[
    list[str] | None,
    Field(description="Collection names to search among those you can read (default: all of them)."),
]


@dataclass(frozen=True)
class Tools:
    knowledge: Knowledge

    async def search(
        self,
        query: Annotated[str, Field(description="What to look for, in plain words.")],
        collections: Collections = None,
        k: Annotated[int, Field(ge=1, le=K_MAX, description="How many results at most.")] = K_DEFAULT,
    ) -> dict[str, Any]:
        """Find the evidence for a query in the knowledge graph, best first: each result names its document
        and unit (chunk, table row or image) and gives the unit's text, its score and the graph paths that
        reached it. Nothing is generated."""
        result = await _in_thread(
            self.knowledge.ask, user=acting_user(), question=query, collections=collections, generate=False
        )
        return {"query": result["question"], "results": evidence_of(result)[:k]}

    async def ask(
        self,
        question: Annotated[str, Field(description="The question to answer from the knowledge base.")],
        collections: Collections = None,
    ) -> dict[str, Any]:
        """Answer a question from the knowledge base. The answer marks its claims with [n]; each citation
        gives the answer span, the source document and unit, and the source sentence that supports it."""
        result = await _in_thread(
            self.knowledge.ask, user=acting_user(), question=question, collections=collections, generate=True
        )
        if result["state"] == Answer.FAILED:
            raise ToolError(result["error"] or "the question could not be answered")
        return {
            "answer_id": result["answer_id"],
            "answer": result["answer"],
            "state": result["state"],  # "done", or "not_found" when the sources do not answer the question
            "not_found": result["not_found"],
            "reason": result["reason"],  # why it is "not found"
            "note": result["error"] or "",  # a note on the answer (a time limit met)
            "citations": citations_of(result),
            "sources": evidence_of(result),
        }

    async def get_source(
        self, unit_id: Annotated[str, Field(description="A unit id, as search and ask give it.")]
    ) -> dict[str, Any]:
        """Read one source unit (a chunk, table row or image) in full: its text, its sentence offsets and
        its document."""
        unit = await _in_thread(self.knowledge.unit, user=acting_user(), unit_id=unit_id)
        if unit is None:
            raise ToolError(NO_UNIT.format(unit_id=unit_id))
        return dict(unit)

    async def get_proof(
        self, seq: Annotated[int, Field(ge=0, description="The change-log entry's sequence number.")]
    ) -> dict[str, Any]:
        """The proof bundle of one change-log entry (format ragkg-ledger-proof/1): the canonical entry,
        its Merkle inclusion path and the chain anchor of the tree that holds it. tools/verify_proof.py
        checks it without ragkg. Needs the auditor role."""
        return dict(await _in_thread(self.knowledge.proof, user=acting_user(), seq=seq))


READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


def server_build(knowledge: Knowledge = REAL) -> MCPServer:
    """A new MCP server whose tools read through ``knowledge``."""
    server: MCPServer = MCPServer(NAME, title="ragkg knowledge graph", instructions=INSTRUCTIONS, subscriptions=False)
    tools = Tools(knowledge)
    for tool in (tools.search, tools.ask, tools.get_source, tools.get_proof):
        server.add_tool(tool, annotations=READ_ONLY)
    return server


_lock = threading.Lock()
_server: MCPServer | None = None


def server() -> MCPServer:
    """The process's MCP server, built on first use."""
    global _server
    with _lock:
        if _server is None:
            _server = server_build()
        return _server


# --- stdio --------------------------------------------------------------------------------------


async def _stdio(user: AbstractBaseUser) -> None:
    with acting_as(user):
        await server().run_stdio_async()


def stdio_serve(*, user: AbstractBaseUser) -> None:
    """Serve MCP on this process's stdin and stdout as ``user`` until stdin closes. While it serves, the
    SDK points file descriptor 1 at stderr, so nothing but the protocol reaches stdout."""
    anyio.run(_stdio, user)
