"""The compact form of an attribution, and its expansion into the ``tokens`` of an answer.

Stored per answer: the units (source position, sentence index, offsets, column), the answer
tokens' offsets, and for each token its ``TOP_K`` best units with scores rounded to 4 digits;
zlib-compressed JSON. ``benchmarks/attribution_storage.py`` measures the size.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

from apps.provenance.types import Attribution

TOP_K = 3
VERSION = 1


def attribution_pack(attribution: Attribution, *, offset_map: Sequence[tuple[int, int] | None]) -> bytes:
    """``offset_map`` gives each token's offsets in the stored answer text (None: the token was dropped)."""
    tokens, top = [], []
    for index, span in enumerate(offset_map):
        if span is None:
            continue
        tokens.append(list(span))
        top.append([[unit, round(score, 4)] for unit, score in attribution.top(index, TOP_K)])
    units = [[u.source, u.index, u.start, u.end, u.label] for u in attribution.units]
    body = {"v": VERSION, "units": units, "tokens": tokens, "top": top}
    return zlib.compress(json.dumps(body, separators=(",", ":")).encode("utf-8"), 9)


def attribution_unpack(payload: bytes | memoryview) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(zlib.decompress(bytes(payload)))
    return body


def answer_tokens(body: dict[str, Any], *, answer: str, sources: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``tokens`` of ``ask --json``: text, offsets in the answer, and the supporting units
    (source id, sentence index and its offsets in that source's text, score), best first."""
    units = body["units"]
    result = []
    for (start, end), top in zip(body["tokens"], body["top"], strict=True):
        supports = []
        for unit_index, score in top:
            source, sentence, unit_start, unit_end, label = units[unit_index]
            support = {
                "id": sources[source]["id"],
                "number": source + 1,
                "sentence": sentence,
                "start": unit_start,
                "end": unit_end,
                "score": score,
            }
            if label:
                support["column"] = label
            supports.append(support)
        result.append({"text": answer[start:end], "start": start, "end": end, "sources": supports})
    return result
