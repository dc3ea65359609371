"""What the OpenAPI document says beyond what the typed views declare.

The views declare their own answers (200, 404, 409...). Every operation can also be refused before it
runs or fail around it, and ``document_complete`` adds those answers to each one: 401 (no or a bad
key), 429 (the key throttle, a busy server), 500, 503 (a service down, load shed), and for operations
with a body 400 (it does not parse), 413 (too large) and 415 (another media type); with their
headers (``WWW-Authenticate``, ``Retry-After``). ``ndjson_response`` documents a streamed answer: one
JSON event per line (``application/x-ndjson``), each described by the stream's item schema.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from apps.api.schemas import AskEvent

NDJSON = "application/x-ndjson"
REF = "#/components/schemas/{model}"
ERROR = {"application/json": {"schema": {"$ref": REF.format(model="ErrorOut")}}}
RETRY_AFTER = {
    "description": "seconds to wait before trying again",
    "schema": {"type": "string", "pattern": "^[0-9]+$"},
}
WWW_AUTHENTICATE = {
    "description": "the scheme to authenticate with",
    "required": True,
    "schema": {"type": "string"},
}
ETAG = {"description": "the answer's entity tag (If-None-Match on GET /answers/{id})", "schema": {"type": "string"}}
COMMON: dict[int, tuple[str, dict[str, Any]]] = {
    401: ("No key or session, or a key that is unknown, expired or revoked.", {"WWW-Authenticate": WWW_AUTHENTICATE}),
    429: (
        "Too many failed key checks from this address (too_many_failures), or busy; see Retry-After.",
        {"Retry-After": RETRY_AFTER},
    ),
    500: ("internal_error: something went wrong on the server; it is logged.", {}),
    503: ("A service is down (unavailable), or the load is shed (busy, no_worker).", {"Retry-After": RETRY_AFTER}),
}
WITH_BODY: dict[int, tuple[str, dict[str, Any]]] = {
    400: ("invalid_request: the body does not parse or a field is not valid (named in fields).", {}),
    413: ("too_large: the body is over the limit.", {}),
    415: ("unsupported_media_type: the body is not in the media type the operation takes.", {}),
}
STREAMS: tuple[Any, ...] = (AskEvent,)


def _stream_schema(item: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The JSON Schema of one streamed item, and the component schemas it refers to."""
    schema = TypeAdapter(item).json_schema(ref_template=REF, mode="serialization")
    return schema, schema.pop("$defs", {})


def ndjson_response(item: Any, description: str, *, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    """``openapi_extra`` for an operation whose 200 may also be a stream of ``item`` lines (its
    component schemas are added by ``document_complete``: list ``item`` in STREAMS)."""
    schema, _defs = _stream_schema(item)
    ok = {"description": description, "content": {NDJSON: {"schema": schema}}, "headers": headers or {}}
    return {"responses": {200: ok}}


def etag_header(*statuses: int) -> dict[str, Any]:
    """``openapi_extra`` for the responses that carry the answer's ETag."""
    return {"responses": {status: {"headers": {"ETag": ETAG}} for status in statuses}}


def _add_responses(operation: dict[str, Any], answers: dict[int, tuple[str, dict[str, Any]]]) -> None:
    """Document each of ``answers`` (status: description, headers) on ``operation`` (ninja's int keys)."""
    responses = operation.setdefault("responses", {})
    for status, (description, headers) in answers.items():
        documented = responses.setdefault(status, {"description": description, "content": ERROR})
        if headers:
            documented.setdefault("headers", {}).update(headers)


def document_complete(schema: dict[str, Any]) -> dict[str, Any]:
    """Add the answers every operation can give, and the stream items' schemas, to ``schema``."""
    for path_item in schema.get("paths", {}).values():
        for operation in path_item.values():
            _add_responses(operation, COMMON)
            if "requestBody" in operation:
                _add_responses(operation, WITH_BODY)
            if 409 in operation["responses"]:  # not_anchored says when to ask again
                _add_responses(operation, {409: ("", {"Retry-After": RETRY_AFTER})})
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for item in STREAMS:
        components.update(_stream_schema(item)[1])
    return schema
