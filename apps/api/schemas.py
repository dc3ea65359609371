"""The REST API's request and response bodies (pydantic models, described in the OpenAPI document).

A request body is validated strictly (``"1"`` is no number, ``0`` no boolean), and every rule a service
applies to a value it is given (a collection name, a question) is stated in the value's schema too, so
the OpenAPI document says exactly which bodies are accepted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field, JsonValue, model_validator

from apps.accounts.services import NAME_MAX
from apps.answers.services import MAX_QUESTION_CHARS

# What str.strip() and str.split() take for whitespace: the services trim names and collapse questions
# with them (tests/unit/api/test_schemas.py checks the list against Python's).
SPACES = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def _escaped(chars: str) -> str:
    return "".join(f"\\u{ord(char):04x}" for char in chars)


def text_pattern(*, forbidden: str = "\x00", nonblank: bool = False) -> str:
    """A regex for text holding none of ``forbidden`` (and with ``nonblank``, something besides
    whitespace). Written with ``\\uXXXX`` escapes only, so Python, pydantic's Rust engine and JSON
    Schema's ECMA-262 dialect read it alike."""
    free = f"[^{_escaped(forbidden)}]*"
    if not nonblank:
        return f"^{free}$"
    return f"^{free}[^{_escaped(forbidden + SPACES)}]{free}$"


PLAIN_TEXT = text_pattern()
COLLECTION_NAME = text_pattern(forbidden="\x00/", nonblank=True)
QUESTION = text_pattern(nonblank=True)
PATTERN_WORDS = {
    PLAIN_TEXT: "must not contain NUL characters",
    COLLECTION_NAME: 'must hold more than whitespace, and no "/" or NUL characters',
    QUESTION: "must hold more than whitespace, and no NUL characters",
}


class BodyIn(Schema):
    """A JSON request body, taken as sent: no type coercion."""

    model_config = ConfigDict(strict=True)


class ErrorOut(Schema):
    error: str = Field(description="a stable code: invalid_request, unauthorized, forbidden, not_found, ...")
    message: str


class CollectionOut(Schema):
    name: str
    title: str
    public: bool
    owner: str | None
    owned: bool = Field(description="whether the caller owns it (and so may grant it)")
    documents: int
    space: str | None = Field(
        description='its text space: "text" (English, MiniLM) or "mtext" (multilingual); null until its first '
        "documents settle it"
    )


SpaceChoice = Literal["auto", "text", "mtext"]


class CollectionIn(BodyIn):
    name: str = Field(
        min_length=1, max_length=NAME_MAX, pattern=COLLECTION_NAME, description='no "/", not only whitespace'
    )
    title: str = Field("", max_length=300, pattern=PLAIN_TEXT)
    public: bool = False
    space: SpaceChoice = Field(
        "auto",
        description='the text space its passages are embedded in: "text" (English, all-MiniLM-L6-v2, fastest), '
        '"mtext" (multilingual-e5-small: Chinese and about 100 languages) or "auto" (by its first documents\' '
        "language)",
    )


class GrantOut(Schema):
    id: int
    user: str | None
    group: str | None
    created_at: datetime


GRANTEE_ONE_OF: list[JsonValue] = [
    {"required": [name], "properties": {name: {"type": "string"}}} for name in ("user", "group")
]


class GrantIn(BodyIn):
    """One user or one group (exactly one of the two)."""

    model_config = ConfigDict(strict=True, json_schema_extra={"oneOf": GRANTEE_ONE_OF})

    user: str | None = Field(None, min_length=1, max_length=150, pattern=PLAIN_TEXT)
    group: str | None = Field(None, min_length=1, max_length=150, pattern=PLAIN_TEXT)

    @model_validator(mode="after")
    def _one_grantee(self) -> GrantIn:
        if (self.user is None) == (self.group is None):
            raise ValueError("give exactly one of user and group")
        return self


class GrantChangeOut(Schema):
    message: str


class DocumentOut(Schema):
    id: str
    collection: str
    path: str
    title: str
    mime: str
    size: int
    sha256: str
    language: str = Field(description='ISO 639-1 code of most of its text, found at ingestion ("und": none)')
    counts: dict[str, Any]
    created_at: datetime
    updated_at: datetime


class DocumentPage(Schema):
    count: int
    items: list[DocumentOut]


class ChangeRef(Schema):
    seq: int
    action: str
    time: str


class DocumentDetail(DocumentOut):
    graph: dict[str, Any] = Field(description="what the graph holds of it: units, entities mentioned, relations")
    changes: list[ChangeRef] = Field(description="its change-log entries, oldest first")


class DeletionPreview(Schema):
    document: DocumentOut
    removes: dict[str, Any] = Field(description="units, and the entities and relations only this document supports")


class DeletionOut(Schema):
    deleted: bool
    removed: dict[str, Any]
    change_log_entry: int | None


class JobFile(Schema):
    number: int
    name: str
    retryable: bool
    retried_as: str | None = None


class JobOut(Schema):
    id: str
    collection: str
    state: Literal["queued", "running", "done", "failed"]
    stage: str
    percent: int
    files: list[JobFile]
    results: list[dict[str, Any]] = Field(description="one outcome per file: path, status, document_id, error")
    counts: dict[str, Any]
    error: str
    retry_of: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class RetryIn(BodyIn):
    files: list[int] | None = Field(None, description="file numbers to retry (default: every failed file kept)")


class AskIn(BodyIn):
    question: str = Field(
        min_length=1, max_length=MAX_QUESTION_CHARS, pattern=QUESTION, description="not only whitespace, no NUL"
    )
    collections: list[str] | None = Field(None, description="search only these (default: every readable one)")
    generate: bool = True
    mode: Literal["graph", "dense"] = "graph"
    stream: bool = Field(False, description="answer as application/x-ndjson events: retrieval, token..., done")


class AnswerOut(Schema):
    answer_id: str
    question: str
    state: Literal["retrieved", "generating", "done", "not_found", "failed"] = Field(
        description='"done": answered; "not_found": the documents do not answer it (why in "reason"); '
        '"failed": a fault (why in "error"); "retrieved"/"generating": not finished yet'
    )
    answer: str = Field(description='the answer, with [n] citations; for "not_found" the refusal text')
    generated: str
    not_found: bool = Field(description='state is "not_found"')
    reason: str = Field(description='why the answer is "not found" (empty otherwise)')
    error: str = Field(description="why it failed; on a finished answer, a note (e.g. a time limit met)")
    sources: list[dict[str, Any]]
    tokens: list[dict[str, Any]]
    citations: list[dict[str, Any]] = Field(description="per [n] marker: document, unit and supporting sentence")
    timings_ms: dict[str, float]
    analysis: dict[str, Any]
    generation: dict[str, Any]
    models: dict[str, str]
    ledger: dict[str, Any]
    cached_from: str | None = Field(
        None, description="the answer this one was copied from when the answer cache served it (docs/answering.md)"
    )


class EntryOut(Schema):
    seq: int
    time: str
    actor: str
    action: str
    subject_kind: str
    subject_id: str
    before: str | None
    after: str | None
    leaf_hash: str
    content_before: Any = None
    content_after: Any = None


class AnswerEvent(AnswerOut):
    """The answer as it stands when retrieval is done, and when the answer is finished."""

    event: Literal["retrieval", "done"]


class TokenEvent(Schema):
    """A piece of the generated text."""

    event: Literal["token"]
    text: str


class GeneratedEvent(Schema):
    """The whole generated text, before citations are added."""

    event: Literal["generated"]
    answer: str
    not_found: bool


class ErrorEvent(Schema):
    """Generation failed (no worker, too slow, the broker down); the ``done`` event follows."""

    event: Literal["error"]
    message: str
    detail: str | None = None


AskEvent = Annotated[AnswerEvent | TokenEvent | GeneratedEvent | ErrorEvent, Field(discriminator="event")]
