"""Passage recall@k of dense (FAISS only) and graph retrieval on HotpotQA and MuSiQue (the sets the
retrieval settings are tuned on) and 2WikiMultihopQA dev300 (validation: never tuned on).

    make bench-multihop      (a private Neo4j under var/bench-multihop; the corpora are ingested
                              on the first run and kept for the next ones: remove var/bench-multihop
                              after a change to what ingestion writes)

The same work as ``manage.py evaluate --json`` for each dataset, for dense retrieval and every graph
variant in ``VARIANTS`` (the configured graph mode with one part turned off: the ablations); writes
benchmarks/results/multihop_recall.json and prints a table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
from collections.abc import Callable
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
from apps.graph.identity import TITLE_LABEL
from apps.graph.schema import graph_schema_apply
from apps.ingest.services import extraction_helpers_stop

KS = (2, 5, 10)


def _without_titles(params: RetrievalParams) -> RetrievalParams:
    labels = tuple(label for label in params.linking.labels if label != TITLE_LABEL)
    return dataclasses.replace(
        params,
        linking=dataclasses.replace(params.linking, labels=labels),
        expansion=dataclasses.replace(params.expansion, skip_types=(*params.expansion.skip_types, TITLE_LABEL)),
    )


def _without_lexical(params: RetrievalParams) -> RetrievalParams:
    return dataclasses.replace(params, lexical=dataclasses.replace(params.lexical, k=0))


def _without_spans(params: RetrievalParams) -> RetrievalParams:
    return dataclasses.replace(params, linking=dataclasses.replace(params.linking, spans=False))


NEVER = 2.0  # a cosine threshold no pair reaches


def _without_synonyms(params: RetrievalParams) -> RetrievalParams:
    return dataclasses.replace(params, expansion=dataclasses.replace(params.expansion, synonym_min_score=NEVER))


def _with_embedding_links(params: RetrievalParams) -> RetrievalParams:
    return dataclasses.replace(params, linking=dataclasses.replace(params.linking, embedding=True))


def _synonyms_from(score: float) -> Callable[[RetrievalParams], RetrievalParams]:
    return lambda params: dataclasses.replace(
        params, expansion=dataclasses.replace(params.expansion, synonym_min_score=score)
    )


def _before(params: RetrievalParams) -> RetrievalParams:
    return _without_synonyms(_without_titles(_without_spans(_without_lexical(params))))


# Each graph variant is the configured graph mode with one part changed (an ablation is one flag);
# "graph-before" turns every part this benchmark ablates off at once; "graph-weighted" is the hand-weighted
# order (cosine + support + lexical, then bridges) over the pool of 40 it had before the learned ranker.
VARIANTS: dict[str, Callable[[RetrievalParams], RetrievalParams]] = {
    "graph": lambda params: params,
    "graph-no-lexical": _without_lexical,
    "graph-no-spans": _without_spans,
    "graph-no-titles": _without_titles,
    "graph-no-synonyms": _without_synonyms,
    "graph-synonyms-0.85": _synonyms_from(0.85),
    "graph-synonyms-0.95": _synonyms_from(0.95),
    "graph-embedding-links": _with_embedding_links,
    "graph-before": _before,
    "graph-weighted": lambda params: dataclasses.replace(params, learned=False, rerank_pool=40),
    "graph-weighted-80": lambda params: dataclasses.replace(params, learned=False),
    "graph-pool-40": lambda params: dataclasses.replace(params, rerank_pool=40),
    "graph-pool-120": lambda params: dataclasses.replace(params, rerank_pool=120),
    "graph-ppr": lambda params: dataclasses.replace(
        params, expansion=dataclasses.replace(params.expansion, scoring="ppr")
    ),
}


def params_for(variant: str) -> RetrievalParams:
    if variant == "dense":
        return retrieval_params(mode="dense")
    return VARIANTS[variant](retrieval_params(mode="graph"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions of each dataset")
    parser.add_argument("--out", default=str(BASE_DIR / "benchmarks/results/multihop_recall.json"))
    parser.add_argument("--datasets", default="hotpotqa,musique,2wiki", help="comma-separated")
    parser.add_argument("--variants", default=",".join(("dense", *VARIANTS)), help="comma-separated")
    args = parser.parse_args()
    graph_schema_apply(driver=get_driver())
    tools = default_tools()
    variants = tuple(args.variants.split(","))
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
            answer_at_1 = "  -  " if row["answer_at_1"] is None else f"{row['answer_at_1']:.3f}"
            print(
                f"{dataset:9} {row['mode']:16} {cells}  all@5 {row['all_supporting@5']:.3f}  ans@1 {answer_at_1}"
                f"  pool {row['pool_recall']:.3f} ({row['pool_size']:.0f})  p50 {row['retrieval_p50_ms']:.1f} ms"
            )
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
