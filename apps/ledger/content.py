"""What an entry's ``before`` and ``after`` hash: a subject's content, as a canonical JSON object.

``content_hash`` is SHA-256 of the canonical bytes (apps/ledger/canonical.py). The same
functions build the content from what ingestion or curation writes and from what the graph
holds now, so ``ledger verify --graph`` compares like with like (docs/ledger.md "Subjects").
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from apps.ledger.canonical import canonical_bytes

Content = dict[str, Any]


def content_hash(content: Content) -> str:
    return hashlib.sha256(canonical_bytes(content)).hexdigest()


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def document_subject(*, collection: str, path: str) -> str:
    """A document's subject id: its collection and path, the same across its versions."""
    return f"{collection}/{path}"


def document_content(*, document: Mapping[str, Any], units: Iterable[tuple[str, str]]) -> Content:
    """A document version: its properties and the digest of every unit (chunk, row, image) it holds.

    ``units`` are ``(unit id, digest)``: SHA-256 of the text for chunks and rows, the image
    bytes' SHA-256 for images.
    """
    return {
        "kind": "Document",
        "id": str(document["id"]),
        "collection": str(document["collection"]),
        "path": str(document["path"]),
        "title": str(document.get("title") or ""),
        "mime": str(document.get("mime") or ""),
        "sha256": str(document["sha256"]),
        "size": int(document.get("size") or 0),
        "units": sorted([unit_id, digest] for unit_id, digest in units),
    }


def entity_content(*, entity_id: str, name: str, type_: str, merged_into: str | None = None) -> Content:
    content: Content = {"kind": "Entity", "id": entity_id, "name": name, "type": type_}
    if merged_into is not None:
        content["merged_into"] = merged_into
    return content


def synonym_subject(*, source: str, target: str) -> str:
    return f"{source}~{target}"


def synonym_content(*, source: str, target: str, status: str) -> Content:
    """A synonym edge: two entities whose names embed close (``source`` the smaller id)."""
    return {"kind": "Synonym", "source": source, "target": target, "status": status}


def relation_subject(*, source: str, predicate: str, target: str) -> str:
    return f"{source}|{predicate}|{target}"


def relation_content(*, source: str, predicate: str, target: str, status: str) -> Content:
    return {"kind": "Relation", "source": source, "predicate": predicate, "target": target, "status": status}
