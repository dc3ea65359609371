"""Calibrate "Not found in your documents": the retrieval signals of answerable and unanswerable questions.

    make bench-not-found                      (the private Neo4j of make bench-multihop; corpora kept)
    make bench-not-found BENCH_ARGS="--limit 100"

Each dataset's questions are asked twice with the pipeline's retrieval (stages 1-6): against their
own corpus's collection (answerable) and against another dataset's collection (unanswerable: the
HotpotQA questions against the MuSiQue passages, MuSiQue against 2Wiki, 2Wiki against HotpotQA).
``apps.answers.support.evidence_measure`` gives each retrieval its similarity and coverage. The
thresholds are fitted on the HotpotQA and MuSiQue samples only (the most unanswerable questions
refused with at most ``--max-wrong`` of the answerable ones refused), then reported on all three,
2WikiMultihopQA dev300 being the validation set. Writes benchmarks/results/not_found.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

from django.conf import settings

from apps.answers.evaluate import FOREIGN, corpus_ensure, eval_collection
from apps.answers.evaluation import eval_questions
from apps.answers.pipeline import retrieve
from apps.answers.support import Evidence, evidence_measure
from apps.answers.tools import default_tools, retrieval_params
from apps.graph.driver import get_driver
from apps.graph.schema import graph_schema_apply

DATASETS = ("hotpotqa", "musique", "2wiki")
TUNING = ("hotpotqa", "musique")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def measure(questions: Sequence[str], collection: str) -> list[Evidence]:
    tools, params = default_tools(), retrieval_params(mode="graph")
    return [
        evidence_measure(
            question, retrieve(question=question, collections=[collection], tools=tools, params=params).sources
        )
        for question in questions
    ]


def refused(evidence: Sequence[Evidence], similarity: float, coverage: float) -> float:
    if not evidence:
        return 0.0
    return sum(e.similarity < similarity or e.coverage < coverage for e in evidence) / len(evidence)


def fit(answerable: Sequence[Evidence], unanswerable: Sequence[Evidence], max_wrong: float) -> tuple[float, float]:
    """The (similarity, coverage) thresholds, from the observed values, that refuse the most unanswerable
    questions while refusing at most ``max_wrong`` of the answerable ones (ties: the lower thresholds)."""
    similarities = sorted({0.0, *(round(e.similarity, 3) for e in (*answerable, *unanswerable))})
    coverages = sorted({0.0, *(round(e.coverage, 3) for e in (*answerable, *unanswerable))})
    best = (-1.0, 0.0, 0.0)
    for s in similarities:
        for c in coverages:
            if refused(answerable, s, c) > max_wrong:
                break  # higher coverage thresholds refuse more of the answerable ones too
            gain = refused(unanswerable, s, c)
            if gain > best[0]:
                best = (gain, s, c)
    return best[1], best[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=100, help="questions per dataset (the first N)")
    parser.add_argument("--max-wrong", type=float, default=0.03, help="answerable questions refused at most")
    parser.add_argument("--out", default=str(BASE_DIR / "benchmarks/results/not_found.json"))
    args = parser.parse_args()
    graph_schema_apply(driver=get_driver())
    data_dir = Path(settings.DEMO_DATA_DIR)
    for dataset in DATASETS:
        corpus_ensure(dataset=dataset, data_dir=data_dir)
    load_before = os.getloadavg()
    signals: dict[str, dict[str, list[Evidence]]] = {}
    for dataset in DATASETS:
        questions = [q.question for q in eval_questions(dataset, data_dir)[: args.limit]]
        signals[dataset] = {
            "answerable": measure(questions, eval_collection(dataset)),
            "unanswerable": measure(questions, eval_collection(FOREIGN[dataset])),
        }
        log(f"{dataset}: {len(questions)} questions measured")
    similarity, coverage = fit(
        [e for d in TUNING for e in signals[d]["answerable"]],
        [e for d in TUNING for e in signals[d]["unanswerable"]],
        args.max_wrong,
    )
    current = (settings.ANSWER_MIN_SIMILARITY, settings.ANSWER_MIN_COVERAGE)
    rows: list[dict[str, Any]] = []
    for dataset in DATASETS:
        for name, (s, c) in (("fitted", (similarity, coverage)), ("settings", current)):
            rows.append(
                {
                    "dataset": dataset,
                    "split": "tuning" if dataset in TUNING else "validation",
                    "thresholds": name,
                    "unanswerable_refused": round(refused(signals[dataset]["unanswerable"], s, c), 4),
                    "answerable_refused": round(refused(signals[dataset]["answerable"], s, c), 4),
                }
            )
    report = {
        "benchmark": "not_found",
        "command": "make bench-not-found " + " ".join(sys.argv[1:]),
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform()},
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "questions_per_dataset": args.limit,
        "foreign_collection": FOREIGN,
        "max_wrong": args.max_wrong,
        "fitted": {"min_similarity": similarity, "min_coverage": coverage},
        "settings": {"min_similarity": current[0], "min_coverage": current[1]},
        "results": rows,
        "signals": {d: {k: [e.as_dict() for e in v] for k, v in kinds.items()} for d, kinds in signals.items()},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"fitted on {', '.join(TUNING)}: min_similarity {similarity}, min_coverage {coverage}")
    print("| dataset | split | thresholds | unanswerable refused | answerable refused |\n|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['dataset']} | {row['split']} | {row['thresholds']} | {row['unanswerable_refused']:.2f} | "
            f"{row['answerable_refused']:.2f} |"
        )
    print(f"\nload average before {report['load_average']['before']}, after {report['load_average']['after']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
