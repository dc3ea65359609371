"""An answer's evidence and citations in the shape the client APIs give them.

``answer_result`` (apps/answers/services.py) keeps citations per answer sentence (offsets in the
answer, the source numbers its markers show) and token provenance per answer token (the source
sentences that support it, with scores). A client wants, for every ``[n]`` in the text: the document,
the unit (chunk, table row or image) and the source sentence that supports it. That sentence is the
one of source n that carries the most attribution over the cited answer sentence's tokens.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any


def _source_fields(source: dict[str, Any]) -> dict[str, Any]:
    return {
        "number": source["number"],
        "document": source["document"],
        "document_id": source["document_id"],
        "collection": source["collection"],
        "unit_id": source["id"],
        "unit_kind": source["kind"],
    }


def evidence_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The ranked sources: document, unit, text, score and the graph paths that reached each."""
    return [
        {**_source_fields(source), "text": source["text"], "score": source["score"], "paths": source.get("paths", [])}
        for source in result.get("sources", [])
    ]


def _best_sentences(tokens: Sequence[dict[str, Any]], start: int, end: int) -> dict[int, dict[str, Any]]:
    """Per source number, its sentence with the most attribution over the tokens in [start, end)."""
    mass: dict[tuple[int, int], float] = defaultdict(float)
    spans: dict[tuple[int, int], dict[str, Any]] = {}
    for token in tokens:
        if not start <= int(token["start"]) < end:
            continue
        for support in token["sources"]:
            key = (int(support["number"]), int(support["sentence"]))
            mass[key] += float(support["score"])
            spans.setdefault(key, support)
    best: dict[int, dict[str, Any]] = {}
    for (number, _sentence), score in sorted(mass.items(), key=lambda item: -item[1]):
        best.setdefault(number, {**spans[(number, _sentence)], "mass": score})
    return best


def citations_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per ``[n]`` marker: the answer span it closes, the source, and the supporting sentence
    (its text and offsets in the unit's text; None when token provenance is not recorded)."""
    sources = {int(source["number"]): source for source in result.get("sources", [])}
    tokens = result.get("tokens", [])
    cited: list[dict[str, Any]] = []
    for citation in result.get("citations", []):
        best = _best_sentences(tokens, int(citation["start"]), int(citation["end"]))
        for number in citation["sources"]:
            source = sources.get(int(number))
            if source is None:
                continue
            support = best.get(int(number))
            sentence = None
            if support is not None:
                sentence = {
                    "index": support["sentence"],
                    "start": support["start"],
                    "end": support["end"],
                    "text": source["text"][support["start"] : support["end"]],
                }
            cited.append(
                {
                    **_source_fields(source),
                    "answer_start": citation["start"],
                    "answer_end": citation["end"],
                    "marker_start": citation.get("marker_start"),
                    "marker_end": citation.get("marker_end"),
                    "sentence": sentence,
                }
            )
    return cited
