"""Loaded by the schemathesis CLI (``hooks`` in tests/integration/schemathesis.toml) for
tests/integration/test_schemathesis.py.

* Uploaded files. ``POST /api/v1/documents`` takes files (``format: binary``) of the types ragkg reads,
  by name and first bytes (``encoding.contentType`` lists them), which JSON Schema cannot say: left to
  itself schemathesis sends a sample file or any bytes, and any bytes are refused (400) though
  schema-valid. Here ``binary`` is drawn as a file ragkg reads, and schemathesis names it by its first
  bytes (``files.pdf``...): a PDF with a line of words, a zip archive holding a text file, a small PNG.
* Streamed answers. ``application/x-ndjson`` (``POST /api/v1/ask`` with ``stream``) is read line by
  line: every line must be JSON and match the documented item schema, or the response fails
  (schemathesis reports a deserializer's error as a failure); the last event is then checked again
  by ``response_schema_conformance``.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import jsonschema_rs
import schemathesis
from hypothesis import strategies as st
from PIL import Image

from tests.support import text_pdf

NDJSON = "application/x-ndjson"
WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", min_size=1, max_size=60)


def _zip_of(text: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("notes.txt", text or "empty")
    return out.getvalue()


def _png_of(size: int, shade: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (size, size), (shade, 255 - shade, 128)).save(out, format="PNG")
    return out.getvalue()


FILES = st.one_of(
    WORDS.map(lambda text: text_pdf([text])),
    WORDS.map(_zip_of),
    st.builds(_png_of, st.integers(1, 16), st.integers(0, 255)),
)
schemathesis.openapi.format("binary", FILES)


def _item_validator(context: Any, status: int) -> jsonschema_rs.Validator:
    """The documented schema of one line of ``status``'s NDJSON, with the document's components."""
    raw = context.operation.schema.raw_schema
    item = context.operation.definition.raw["responses"][str(status)]["content"][NDJSON]["schema"]
    return jsonschema_rs.validator_for({**item, "components": raw["components"]})


@schemathesis.deserializer(NDJSON)
def ndjson_events(context: Any, response: Any) -> Any:
    lines = [line for line in response.content.decode("utf-8").split("\n") if line.strip()]
    if not lines:
        raise ValueError("the stream holds no event")
    validator = _item_validator(context, response.status_code)
    events = [json.loads(line) for line in lines]
    for number, event in enumerate(events, start=1):
        for error in validator.iter_errors(event):
            raise ValueError(f"line {number} ({str(event.get('event'))!r}): {error.message}")
    return events[-1]
