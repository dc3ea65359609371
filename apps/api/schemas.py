"""The REST API's request and response bodies (pydantic models, described in the OpenAPI document)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import Field


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


class CollectionIn(Schema):
    name: str = Field(min_length=1, max_length=100, description='no "/"')
    title: str = Field("", max_length=300)
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


class GrantIn(Schema):
    user: str | None = Field(None, max_length=150)
    group: str | None = Field(None, max_length=150)


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


class RetryIn(Schema):
    files: list[int] | None = Field(None, description="file numbers to retry (default: every failed file kept)")


class AskIn(Schema):
    question: str = Field(min_length=1, max_length=20000)
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
