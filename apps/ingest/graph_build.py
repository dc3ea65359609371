"""Turn a parsed document, its chunks and its extractions into graph rows.

Pure functions: no I/O. Ids are content hashes, so the same input always
gives the same ids and a re-ingest of the same bytes is recognisable.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apps.core.language import detect_language, main_language, written_in_cjk
from apps.graph.identity import TITLE_LABEL, content_id, entity_id, entity_key
from apps.ingest.names import name_spans
from apps.ingest.parsing.text import file_stem
from apps.ingest.types import Extraction, ParsedDocument, ParsedTable, TextChunk

CO_OCCURS = "co_occurs_with"
TITLE_MAX_WORDS = 12
TITLE_LINK_MAX_WORDS = 8  # the longest span of a passage looked up as a title
_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")  # "Polish-Russian War (film)" -> "Polish-Russian War"

Row = dict[str, Any]


def document_id(*, collection: str, sha256: str) -> str:
    return content_id("document", collection, sha256)


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
    title_links: list[Row] = field(default_factory=list)  # chunk spans that may name a title entity
    titles: list[Row] = field(default_factory=list)  # the entity the title names: {id, name, query}

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
    *,
    parsed: ParsedDocument,
    collection: str,
    chunks: Sequence[TextChunk],
    images: Sequence[Row],
    page_images: Sequence[Mapping[str, Any]] = (),
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
            # Where each page begins in the text (PDFs): the document viewer's page breaks.
            "page_starts": [page.start for page in parsed.pages],
            "page_numbers": [page.number for page in parsed.pages],
            # the rendered pages in order (page 1 first): files under MEDIA_ROOT and their sizes in pixels
            "page_images": [str(page["path"]) for page in page_images],
            "page_widths": [int(page["width"]) for page in page_images],
            "page_heights": [int(page["height"]) for page in page_images],
        }
    )
    units: list[Unit] = []
    languages = [detect_language(chunk.text) for chunk in chunks]
    # The language of most of the text ("und" without any): shown in the viewer and the API.
    graph.document["language"] = main_language(zip(languages, (len(chunk.text) for chunk in chunks), strict=True))
    for chunk, language in zip(chunks, languages, strict=True):
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
                "language": language,
                "text_cjk": cjk_text(chunk.text),
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
                    "text_cjk": cjk_text(text),
                    "document_id": doc_id,
                    "collection": collection,
                }
            )
            units.append(Unit("Row", row_id, text))
    for image in images:
        text_cjk = cjk_text(image["text"] or "")
        graph.images.append({**image, "document_id": doc_id, "collection": collection, "text_cjk": text_cjk})
        if image["text"]:
            units.append(Unit("Image", image["id"], image["text"]))
    return graph, units


def cjk_text(text: str) -> str | None:
    """The unit's text again when it is written in CJK characters, for the full-text index with the
    cjk analyzer (``unit_cjk_fulltext``): a unit without it is not in that index at all, so English
    text is indexed once."""
    return text if written_in_cjk(text) else None


def add_knowledge(*, graph: DocumentGraph, units: Sequence[Unit], extractions: Sequence[Extraction]) -> None:
    """Entities, mentions and relations from each unit's extraction, the entity the title names,
    and the chunk spans that may name other documents' titles."""
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
    _title_mention(graph, units, mentions, names, types)
    for ent, surface in names.items():
        ranked = sorted(surface, key=lambda name: (-surface[name], name))
        graph.entities.append(
            {"id": ent, "name": ranked[0], "type": types[ent], "aliases": ranked[1:], "document_id": doc_id}
        )
    graph.mentions = dict(mentions)
    graph.relations = [
        {
            "source": s,
            "target": t,
            "predicate": p,
            "evidence": units_,
            "document_id": doc_id,
            "collection": graph.document["collection"],
        }
        for (s, t, p), units_ in evidence.items()
    ]
    title_links(graph)


def _sentence_index(extraction: Extraction) -> Callable[[int], int]:
    """A function from an offset to the index of the sentence that contains it."""
    starts = [start for start, _ in extraction.sentences]
    return lambda offset: max(0, bisect.bisect_right(starts, offset) - 1)


def title_name(title: str, path: str) -> str:
    """The name a document's title gives its subject: the title without a trailing parenthetical
    ("Polish-Russian War (film)" -> "Polish-Russian War"). Empty when the title is no name: a file
    name's stem with an underscore (a title taken from "report_2023.pdf"), a sentence (a final full
    stop), more than ``TITLE_MAX_WORDS`` words, or no capital letter or digit."""
    title = " ".join(title.split())
    if not title or title.endswith(".") or ("_" in title and title == file_stem(path)):
        return ""
    name = _DISAMBIGUATION.sub("", title) or title
    if len(name.split()) > TITLE_MAX_WORDS or not any(char.isupper() or char.isdigit() for char in name):
        return ""
    return name


def _title_mention(
    graph: DocumentGraph,
    units: Sequence[Unit],
    mentions: dict[str, list[Row]],
    names: dict[str, dict[str, int]],
    types: dict[str, str],
) -> None:
    """The document's first chunk mentions the entity its title names, in its first sentence (a
    Wikipedia page, a report, a product sheet names its subject in the title). The title entity
    is added even where the extractor tagged the same name: it is the page other passages link to
    (``title_links``), whatever type the extractor gave the name here or there."""
    title = graph.document.get("title") or ""
    name = title_name(title, graph.document.get("path") or "")
    first = next((unit for unit in units if unit.label == "Chunk"), None)
    if not name or first is None:
        return
    ent = entity_id(entity_key(name, TITLE_LABEL))
    start = first.text.find(name)
    names[ent][name] += 2  # the name ranks above the full title, kept as an alias
    if title != name:
        names[ent][title] += 1
    types.setdefault(ent, TITLE_LABEL)
    graph.titles = [{"id": ent, "name": name, "query": _phrase(name)}]
    mentions["Chunk"].append(
        {
            "unit": first.id,
            "entity": ent,
            "start": max(start, 0),
            "end": start + len(name) if start >= 0 else 0,
            "sentence": 0,
        }
    )


def _phrase(name: str) -> str:
    """A Lucene phrase query for the name (quotes and backslashes escaped)."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def title_links(graph: DocumentGraph) -> None:
    """Every span of the document's chunks that may name a title entity (``names.name_spans``), as a
    mention row to that entity's id: the writer keeps the rows whose entity exists
    (``cypher.TITLE_LINKS_CREATE``), so a passage naming "Charmed" mentions the page titled
    "Charmed" even where the extractor tagged nothing there. One row per chunk and entity."""
    links: list[Row] = []
    for chunk in graph.chunks:
        text = chunk["text"]
        starts = chunk["sentence_starts"]
        seen: set[str] = set()
        for start, end in name_spans(text, TITLE_LINK_MAX_WORDS):
            ent = entity_id(entity_key(text[start:end], TITLE_LABEL))
            if ent in seen:
                continue
            seen.add(ent)
            sentence = max(0, bisect.bisect_right(starts, start) - 1)
            links.append(
                {
                    "unit": chunk["id"],
                    "entity": ent,
                    "start": start,
                    "end": end,
                    "sentence": sentence,
                    "document_id": graph.document["id"],
                }
            )
    graph.title_links = links
