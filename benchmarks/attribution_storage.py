"""How much room token provenance takes: 10,000 answers of 200 tokens in the configured database.

    make bench-attribution      (runs this after the faithfulness benchmark, on a scratch SQLite database)

Each synthetic answer has 8 sources of 6 sentences (48 units, about 600 characters of text per
source, stored in full with its hash as every answer stores them) and 200 answer tokens, each
with scores over all units drawn from a sparse Dirichlet; the fast-mode record keeps each
token's best 3 units (apps.provenance.storage). Measured: the packed record's bytes, and the
database file's growth for the answers and for their attribution records.

Writes benchmarks/results/attribution_storage.json.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

from django.db import connection, transaction

from apps.answers.models import Answer
from apps.answers.types import Source
from apps.provenance.models import AttributionRecord
from apps.provenance.storage import attribution_pack
from apps.provenance.types import FAST, Attribution, TokenSpan
from apps.provenance.units import source_units

ANSWERS = 10_000
TOKENS = 200
SOURCES = 8
SENTENCES = 6
BATCH = 500


def _database_bytes() -> int:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA page_count")
        pages = cursor.fetchone()[0]
        cursor.execute("PRAGMA page_size")
        return int(pages * cursor.fetchone()[0])


def _sources(rng: np.random.Generator) -> list[dict[str, object]]:
    words = ["tower", "river", "novel", "1889", "Paris", "author", "museum", "bridge", "country", "film"]
    result = []
    for number in range(1, SOURCES + 1):
        sentences, spans, at = [], [], 0
        for _ in range(SENTENCES):
            sentence = " ".join(rng.choice(words, size=16)).capitalize() + "."
            sentences.append(sentence)
            spans.append((at, at + len(sentence)))
            at += len(sentence) + 1
        text = " ".join(sentences)
        source = Source(
            number, f"c{number}-{rng.integers(10**9)}", "chunk", "d", f"doc{number}.txt", "", text, "", 0.5, ()
        )
        result.append(dataclass_dict(source, spans))
    return result


def dataclass_dict(source: Source, spans: list[tuple[int, int]]) -> dict[str, object]:
    data = source.as_dict()
    data["sentences"] = [list(span) for span in spans]
    return data


def main() -> int:
    if connection.vendor != "sqlite":
        print("run this against a scratch SQLite database (make bench-attribution does)")
        return 2
    rng = np.random.default_rng(0)
    answer_text = " ".join(["word"] * TOKENS)
    tokens = [TokenSpan("word", i * 5, i * 5 + 4) for i in range(TOKENS)]
    offsets = [(t.start, t.end) for t in tokens]
    started = time.perf_counter()
    AttributionRecord.objects.all().delete()
    Answer.objects.all().delete()
    base = _database_bytes()
    payload_sizes = []
    answers: list[Answer] = []
    for _ in range(ANSWERS):
        sources = _sources(rng) if len(answers) < 50 else answers[len(answers) % 50].sources
        answers.append(
            Answer(question="q " * 10, answer=answer_text, generated=answer_text, sources=sources, state="done")
        )
    with transaction.atomic():
        Answer.objects.bulk_create(answers, batch_size=BATCH)
    after_answers = _database_bytes()
    units = source_units(answers[0].sources)
    records = []
    for answer in answers:
        scores = rng.dirichlet(np.full(len(units), 0.1), size=TOKENS).astype(np.float32)
        attribution = Attribution(FAST, "attention+copy", "SmolLM2-135M-Instruct", tokens, units, scores, 2, 0.1)
        payload = attribution_pack(attribution, offset_map=offsets)
        payload_sizes.append(len(payload))
        records.append(
            AttributionRecord(
                answer=answer,
                mode=FAST,
                method=attribution.method,
                model=attribution.model,
                tokens=TOKENS,
                forward_passes=2,
                seconds=0.1,
                payload=payload,
                summary={},
            )
        )
    with transaction.atomic():
        AttributionRecord.objects.bulk_create(records, batch_size=BATCH)
    after_records = _database_bytes()
    report = {
        "benchmark": "attribution_storage",
        "command": "make bench-attribution",
        "answers": ANSWERS,
        "tokens_per_answer": TOKENS,
        "units_per_answer": len(units),
        "top_units_per_token": 3,
        "payload_bytes": {"mean": round(statistics.fmean(payload_sizes), 1), "max": max(payload_sizes)},
        "database_mib": {
            "answers_with_sources": round((after_answers - base) / 2**20, 1),
            "attribution_records": round((after_records - after_answers) / 2**20, 1),
        },
        "attribution_bytes_per_answer": round((after_records - after_answers) / ANSWERS, 1),
        "seconds": round(time.perf_counter() - started, 1),
    }
    AttributionRecord.objects.all().delete()
    Answer.objects.all().delete()
    out = BASE_DIR / "benchmarks/results/attribution_storage.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
