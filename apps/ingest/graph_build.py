"""Turn a parsed document, its chunks and its extractions into graph rows.

Pure functions: no I/O. Ids are content hashes, so the same input always
gives the same ids and a re-ingest of the same bytes is recognisable.
"""

from __future__ import annotations

import bisect
import hashlib
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from apps.ingest.types import Extraction, ParsedDocument, ParsedTable, TextChunk

CO_OCCURS = "co_occurs_with"

Row = dict[str, Any]


def content_id(*parts: str) -> str:
    """A stable 32-hex-digit id from its parts."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return digest[:32]


def document_id(*, collection: str, sha256: str) -> str:
    return content_id("document", collection, sha256)


def entity_id(key: str) -> str:
    return content_id("entity", key)


def render_row(*, title: str, table: ParsedTable, idx: int) -> str:
    """One table row as a sentence of ``column: value`` pairs, for retrieval and NER."""
    cells = "; ".join(
        f"{column}: {value}" for column, value in zip(table.columns, table.rows[idx], strict=True) if value
    )
    return f"{title} / {table.name}, row {idx + 1}: {cells}."


@dataclass(frozen=True)
class Unit:
    """Something that mentions entities: a chunk, a table row or an image."""

    label: str  # Chunk | Row | Image
    id: str
    text: str


@dataclass
class DocumentGraph:
    document: Row
    chunks: list[Row] = field(default_factory=list)
    next_links: list[Row] = field(default_factory=list)
    images: list[Row] = field(default_factory=list)
    tables: list[Row] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    entities: list[Row] = field(default_factory=list)
    mentions: dict[str, list[Row]] = field(default_factory=dict)
    relations: list[Row] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "chunks": len(self.chunks),
            "images": len(self.images),
            "tables": len(self.tables),
            "rows": len(self.rows),
            "entities": len(self.entities),
            "mentions": sum(len(rows) for rows in self.mentions.values()),
            "relations": len(self.relations),
        }


def build_structure(
    *, parsed: ParsedDocument, collection: str, chunks: Sequence[TextChunk], images: Sequence[Row]
) -> tuple[DocumentGraph, list[Unit]]:
    """Document, chunk, table, row and image rows, and the units to analyse."""
    doc_id = document_id(collection=collection, sha256=parsed.sha256)
    graph = DocumentGraph(
        document={
            "id": doc_id,
            "title": parsed.title,
            "path": parsed.path,
            "mime": parsed.mime,
            "sha256": parsed.sha256,
            "collection": collection,
            "size": parsed.size,
        }
    )
    units: list[Unit] = []
    for chunk in chunks:
        chunk_id = content_id("chunk", doc_id, str(chunk.start), chunk.text)
        graph.chunks.append(
            {
                "id": chunk_id,
                "text": chunk.text,
                "ord": chunk.ord,
                "sha256": hashlib.sha256(chunk.text.encode("utf-8")).hexdigest(),
                "start": chunk.start,
                "end": chunk.end,
                "page": chunk.page,
                "sentence_starts": [start for start, _ in chunk.sentences],
                "sentence_ends": [end for _, end in chunk.sentences],
                "document_id": doc_id,
                "collection": collection,
            }
        )
        units.append(Unit("Chunk", chunk_id, chunk.text))
    graph.next_links = [
        {"source": a["id"], "target": b["id"]} for a, b in zip(graph.chunks, graph.chunks[1:], strict=False)
    ]
    for number, table in enumerate(parsed.tables):
        table_id = content_id("table", doc_id, str(number), table.name)
        graph.tables.append(
            {
                "id": table_id,
                "name": table.name,
                "columns": list(table.columns),
                "row_count": len(table.rows),
                "document_id": doc_id,
            }
        )
        for idx, values in enumerate(table.rows):
            row_id = content_id("row", table_id, str(idx))
            text = render_row(title=parsed.title or parsed.path, table=table, idx=idx)
            graph.rows.append(
                {
                    "id": row_id,
                    "table_id": table_id,
                    "idx": idx,
                    "cells": list(values),
                    "text": text,
                    "document_id": doc_id,
                    "collection": collection,
                }
            )
            units.append(Unit("Row", row_id, text))
    for image in images:
        graph.images.append({**image, "document_id": doc_id, "collection": collection})
        if image["text"]:
            units.append(Unit("Image", image["id"], image["text"]))
    return graph, units


def add_knowledge(*, graph: DocumentGraph, units: Sequence[Unit], extractions: Sequence[Extraction]) -> None:
    """Entities, mentions and relations from each unit's extraction."""
    doc_id = graph.document["id"]
    names: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    types: dict[str, str] = {}
    mentions: dict[str, list[Row]] = defaultdict(list)
    evidence: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for unit, extraction in zip(units, extractions, strict=True):
        sentence_of = _sentence_index(extraction)
        for mention in extraction.mentions:
            ent = entity_id(mention.key)
            names[ent][mention.text] += 1
            types.setdefault(ent, mention.label)
            mentions[unit.label].append(
                {
                    "unit": unit.id,
                    "entity": ent,
                    "start": mention.start,
                    "end": mention.end,
                    "sentence": sentence_of(mention.start),
                }
            )
        for relation in extraction.relations:
            source = entity_id(extraction.mentions[relation.source].key)
            target = entity_id(extraction.mentions[relation.target].key)
            if source == target:
                continue
            predicate = relation.predicate or CO_OCCURS
            if predicate == CO_OCCURS and target < source:
                source, target = target, source  # co-occurrence has no direction
            key = (source, target, predicate)
            if unit.id not in evidence[key]:
                evidence[key].append(unit.id)
    for ent, surface in names.items():
        ranked = sorted(surface, key=lambda name: (-surface[name], name))
        graph.entities.append(
            {"id": ent, "name": ranked[0], "type": types[ent], "aliases": ranked[1:], "document_id": doc_id}
        )
    graph.mentions = dict(mentions)
    graph.relations = [
        {"source": s, "target": t, "predicate": p, "evidence": units_, "document_id": doc_id}
        for (s, t, p), units_ in evidence.items()
    ]


def _sentence_index(extraction: Extraction) -> Callable[[int], int]:
    """A function from an offset to the index of the sentence that contains it."""
    starts = [start for start, _ in extraction.sentences]
    return lambda offset: max(0, bisect.bisect_right(starts, offset) - 1)
