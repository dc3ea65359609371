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

    make bench-not-found BENCH_ARGS="--languages --limit 300"

The thresholds of the other readings (``apps.answers.support.READINGS``: a Chinese question over
Chinese text, a question in another script than its sources) on XQuAD: its paragraphs in each
language split by article (even and odd) into two collections of the multilingual space; each
question asked against its own half (answerable) and the other (unanswerable), for the four pairs
zh->zh, en->zh, zh->en and en->en. Fitted per reading on the questions of the even articles, checked
on the odd ones; en->en is reported with the settings' thresholds. Writes
benchmarks/results/not_found_languages.json.
"""

from __future__ import annotations

import argparse
import dataclasses
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

from apps.answers.evaluate import FOREIGN, corpus_ensure, eval_collection, files_ensure
from apps.answers.evaluation import XQUAD_DATASETS, eval_questions
from apps.answers.pipeline import retrieve
from apps.answers.services import evidence_params
from apps.answers.support import CJK, FROM_CJK, SAME, TO_CJK, Evidence, EvidenceParams, evidence_measure
from apps.answers.tools import default_tools, retrieval_params
from apps.graph.driver import get_driver
from apps.graph.schema import graph_schema_apply
from apps.ingest import corpora
from apps.vectors.spaces import MULTILINGUAL, collection_space_set

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


HALVES = ("even", "odd")  # XQuAD's articles by their number: the fitting half, the checking half
FITTED_READINGS = (CJK, TO_CJK, FROM_CJK)


def half_collection(language: str, half: str) -> str:
    return f"eval-xquad-{language}-{half}"


def xquad_halves_ensure(data_dir: Path, language: str) -> dict[str, str]:
    """Both halves of XQuAD's paragraphs in ``language`` ingested into collections of the multilingual
    space; returns each paragraph's document path with its half."""
    files = list(corpora.xquad_paragraphs(data_dir, language))
    articles = corpora.xquad(data_dir, language).articles
    halves = {name: HALVES[article % 2] for (name, _), article in zip(files, articles, strict=True)}
    for half in HALVES:
        collection = half_collection(language, half)
        collection_space_set(collection, MULTILINGUAL)
        files_ensure([file for file in files if halves[file[0]] == half], collection=collection)
    return halves


def languages_measure(data_dir: Path, limit: int) -> dict[str, dict[str, dict[str, list[Evidence]]]]:
    """pair -> half -> answerable/unanswerable -> the evidence of each question of that half's articles."""
    signals: dict[str, dict[str, dict[str, list[Evidence]]]] = {}
    for pair in XQUAD_DATASETS:
        written = pair.split("-")[2]
        halves = xquad_halves_ensure(data_dir, written)
        questions = eval_questions(pair, data_dir)[:limit]
        signals[pair] = {}
        for number, half in enumerate(HALVES):
            asked = [q.question for q in questions if halves[next(iter(q.supporting))] == half]
            signals[pair][half] = {
                "answerable": measure(asked, half_collection(written, half)),
                "unanswerable": measure(asked, half_collection(written, HALVES[1 - number])),
            }
        log(f"{pair}: {len(questions)} questions measured")
    return signals


def signals_of(halves: dict[str, dict[str, list[Evidence]]]) -> dict[str, Any]:
    return {
        half: {kind: [{**e.as_dict(), "reading": e.reading} for e in evidence] for kind, evidence in kinds.items()}
        for half, kinds in halves.items()
    }


def reading_rows(
    pair: str,
    half: str,
    evidence: dict[str, list[Evidence]],
    params: EvidenceParams,
    fitted: dict[str, tuple[float, float]],
) -> list[dict[str, Any]]:
    """One pair's questions of one half: for each reading among them, the share refused under the
    settings' thresholds and (for a fitted reading) under the fitted ones."""
    rows = []
    for reading in sorted({e.reading for kind in evidence.values() for e in kind}):
        answerable = [e for e in evidence["answerable"] if e.reading == reading]
        unanswerable = [e for e in evidence["unanswerable"] if e.reading == reading]
        current = params.thresholds(reading)
        choices = {"settings": (current.min_similarity, current.min_coverage)}
        if reading in fitted:
            choices["fitted"] = fitted[reading]
        for name, (s, c) in choices.items():
            rows.append(
                {
                    "pair": pair,
                    "reading": reading,
                    "half": half,
                    "split": "tuning" if half == "even" else "validation",
                    "thresholds": name,
                    "questions": len(answerable),
                    "unanswerable_refused": round(refused(unanswerable, s, c), 4),
                    "answerable_refused": round(refused(answerable, s, c), 4),
                }
            )
    return rows


def languages_main(args: argparse.Namespace) -> int:
    data_dir = Path(settings.DEMO_DATA_DIR)
    load_before = os.getloadavg()
    signals = languages_measure(data_dir, args.limit)

    def of(reading: str, half: str, kind: str) -> list[Evidence]:
        return [e for pair in signals.values() for e in pair[half][kind] if e.reading == reading]

    fitted = {
        r: fit(of(r, "even", "answerable"), of(r, "even", "unanswerable"), args.max_wrong) for r in FITTED_READINGS
    }
    params = evidence_params()
    rows = [
        row
        for pair, by_half in signals.items()
        for half in HALVES
        for row in reading_rows(pair, half, by_half[half], params, fitted)
    ]
    report = {
        "benchmark": "not_found_languages",
        "command": "make bench-not-found BENCH_ARGS=" + repr(" ".join(sys.argv[1:])),
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform()},
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "questions_per_pair": args.limit,
        "max_wrong": args.max_wrong,
        "fitted": {r: {"min_similarity": s, "min_coverage": c} for r, (s, c) in fitted.items()},
        "settings": {r: dataclasses.asdict(params.thresholds(r)) for r in (*FITTED_READINGS, SAME)},
        "results": rows,
        "signals": {pair: signals_of(halves) for pair, halves in signals.items()},
    }
    out = Path(args.out or BASE_DIR / "benchmarks/results/not_found_languages.json")
    out.write_text(json.dumps(report, indent=1) + "\n")
    for reading, (s, c) in fitted.items():
        print(f"{reading}: fitted on the even articles: min_similarity {s}, min_coverage {c}")
    print("| pair | reading | half | thresholds | questions | unanswerable refused | answerable refused |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['pair']} | {row['reading']} | {row['half']} | {row['thresholds']} | {row['questions']} | "
            f"{row['unanswerable_refused']:.2f} | {row['answerable_refused']:.2f} |"
        )
    print(f"\nload average before {report['load_average']['before']}, after {report['load_average']['after']}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=100, help="questions per dataset (the first N)")
    parser.add_argument("--max-wrong", type=float, default=0.03, help="answerable questions refused at most")
    parser.add_argument("--languages", action="store_true", help="the Chinese and cross-script readings on XQuAD")
    parser.add_argument("--out", default=None, help="the results file (default: by the kind of run)")
    args = parser.parse_args()
    graph_schema_apply(driver=get_driver())
    if args.languages:
        return languages_main(args)
    args.out = args.out or str(BASE_DIR / "benchmarks/results/not_found.json")
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
