"""Passage recall@k of dense (FAISS only) and graph retrieval on HotpotQA and MuSiQue (the sets the
retrieval settings are tuned on) and 2WikiMultihopQA dev300 (validation: never tuned on).

    make bench-multihop      (a private Neo4j under var/bench-multihop; the corpora are ingested
                              on the first run and kept for the next ones)

The same work as ``manage.py evaluate --json`` for both datasets, plus the personalized-PageRank
scoring for comparison; writes benchmarks/results/multihop_recall.json and prints a table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

from django.conf import settings

from apps.answers.evaluate import dataset_evaluate
from apps.answers.pipeline import RetrievalParams
from apps.answers.tools import default_tools, retrieval_params
from apps.graph.driver import get_driver
from apps.graph.schema import graph_schema_apply
from apps.ingest.services import extraction_helpers_stop

KS = (2, 5, 10)


def params_for(variant: str) -> RetrievalParams:
    if variant == "graph-ppr":
        params = retrieval_params(mode="graph")
        return dataclasses.replace(params, expansion=dataclasses.replace(params.expansion, scoring="ppr"))
    return retrieval_params(mode=variant)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions of each dataset")
    parser.add_argument("--out", default=str(BASE_DIR / "benchmarks/results/multihop_recall.json"))
    parser.add_argument("--datasets", default="hotpotqa,musique,2wiki", help="comma-separated")
    args = parser.parse_args()
    graph_schema_apply(driver=get_driver())
    tools = default_tools()
    variants = ("dense", "graph", "graph-ppr")
    results = {}
    for dataset in args.datasets.split(","):
        reports = dataset_evaluate(
            dataset=dataset,
            data_dir=Path(settings.DEMO_DATA_DIR),
            modes=variants,
            ks=KS,
            tools=tools,
            params_for=params_for,
            limit=args.limit,
        )
        results[dataset] = [report.as_dict() for report in reports]
    extraction_helpers_stop()
    report = {
        "benchmark": "multihop_recall",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
        "text_embedder": tools.text.name,
        "split": {"hotpotqa": "tuning", "musique": "tuning", "2wiki": "validation"},
        "load_average": os.getloadavg(),
        "settings": {name: getattr(settings, name) for name in dir(settings) if name.startswith("ANSWER_")},
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    for dataset, rows in results.items():
        for row in rows:
            cells = "  ".join(f"R@{k} {row[f'recall@{k}']:.3f}" for k in KS)
            print(f"{dataset:9} {row['mode']:10} {cells}  p50 {row['retrieval_p50_ms']:.1f} ms")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
