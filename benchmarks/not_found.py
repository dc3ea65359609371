"""Calibrate "Not found in your documents": the retrieval signals of answerable and unanswerable questions.

    make bench-not-found                      (the private Neo4j of make bench-multihop; corpora kept)
    make bench-not-found BENCH_ARGS="--limit 100"

Each dataset's questions are asked twice with the pipeline's retrieval (stages 1-6): against their
own corpus's collection (answerable) and against another dataset's collection (unanswerable: the
HotpotQA questions against the MuSiQue passages, MuSiQue against 2Wiki, 2Wiki against HotpotQA), and
Wikipedia questions about other articles (XQuAD's English questions, from SQuAD articles none of the
corpora hold, less any whose answer the collection's passages contain) against each collection.
``apps.answers.support.evidence_measure`` gives each retrieval its similarity and coverage. The
thresholds are fitted on the HotpotQA and MuSiQue samples only (the most unanswerable questions
refused with at most ``--max-wrong`` of the answerable ones refused), then reported on all three,
2WikiMultihopQA dev300 being the validation set.

The second kind of corpus is not Wikipedia: Click's manual (benchmarks/docs_corpus.py, fetched from
PyPI once into var/docs-corpus), with 60 answerable and 60 unanswerable questions written from its
passages before any retrieval was run (benchmarks/data/docs_qa.json; the unanswerable ones half about
Click itself, half off-topic). Its odd-numbered questions join the fitting, the even-numbered ones are
held out. The fit keeps the answerable refused at most ``--max-wrong`` on each fitting corpus (Wikipedia's
two, the manual's half) separately, so the larger corpus cannot buy its refusals with the other's
answers. Writes benchmarks/results/not_found.json.

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
from apps.answers.evaluation import XQUAD_DATASETS, eval_corpus, eval_questions
from apps.answers.pipeline import retrieve
from apps.answers.services import evidence_params
from apps.answers.support import (
    CJK,
    FROM_CJK,
    SAME,
    TO_CJK,
    Evidence,
    EvidenceParams,
    Thresholds,
    evidence_measure,
    thresholds_met,
)
from apps.answers.tools import default_tools, retrieval_params
from apps.graph.driver import get_driver
from apps.graph.schema import graph_schema_apply
from apps.ingest import corpora
from apps.vectors.spaces import MULTILINGUAL, collection_space_set
from benchmarks import docs_corpus

DATASETS = ("hotpotqa", "musique", "2wiki")
TUNING = ("hotpotqa", "musique")
DOCS = "docs"  # Click's manual (benchmarks/docs_corpus.py)
DOCS_COLLECTION = f"eval-docs-{docs_corpus.PACKAGE}"
DOCS_QUESTIONS = BASE_DIR / "benchmarks/data/docs_qa.json"


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
    return refused_by(evidence, Thresholds(similarity, coverage))


def refused_by(evidence: Sequence[Evidence], thresholds: Thresholds) -> float:
    if not evidence:
        return 0.0
    return sum(not thresholds_met(e, thresholds) for e in evidence) / len(evidence)


def fit(
    answerable: Sequence[Sequence[Evidence]], unanswerable: Sequence[Evidence], max_wrong: float
) -> tuple[float, float]:
    """The (similarity, coverage) thresholds, from the observed values, that refuse the most unanswerable
    questions while refusing at most ``max_wrong`` of the answerable ones of each group (corpus) in
    ``answerable`` (ties: the lower thresholds)."""
    everything = [*(e for group in answerable for e in group), *unanswerable]
    similarities = sorted({0.0, *(round(e.similarity, 3) for e in everything)})
    coverages = sorted({0.0, *(round(e.coverage, 3) for e in everything)})
    best = (-1.0, 0.0, 0.0)
    for s in similarities:
        for c in coverages:
            if any(refused(group, s, c) > max_wrong for group in answerable):
                break  # higher coverage thresholds refuse more of the answerable ones too
            gain = refused(unanswerable, s, c)
            if gain > best[0]:
                best = (gain, s, c)
    return best[1], best[2]


COVERAGE_WEIGHTS = (0.5, 0.75, 1.0)
GRID = 0.005  # the combined rule's thresholds are looked for in steps of this


def fit_combined(
    answerable: Sequence[Sequence[Evidence]], unanswerable: Sequence[Evidence], max_wrong: float
) -> Thresholds:
    """The combined rule (``Thresholds.min_evidence``: similarity + weight * coverage, with a floor on the
    similarity and no coverage threshold of its own) that refuses the most unanswerable questions while
    refusing at most ``max_wrong`` of each group's answerable ones (ties: the lower thresholds)."""
    best: tuple[float, Thresholds] = (-1.0, Thresholds(0.0, 0.0))
    floors = [round(0.25 + GRID * i, 3) for i in range(int(0.25 / GRID) + 1)]  # 0.25 .. 0.50
    for weight in COVERAGE_WEIGHTS:
        for floor in floors:
            for step in range(int((1.0 + weight) / GRID) + 1):
                candidate = Thresholds(floor, 0.0, round(step * GRID, 3), weight)
                if any(refused_by(group, candidate) > max_wrong for group in answerable):
                    break  # a higher combined threshold refuses more of the answerable ones too
                gain = refused_by(unanswerable, candidate)
                if gain > best[0]:
                    best = (gain, candidate)
    return best[1]


def docs_questions() -> dict[str, list[dict[str, Any]]]:
    return dict(json.loads(DOCS_QUESTIONS.read_text()))


def docs_half(question: dict[str, Any]) -> str:
    """ "tuning" for the odd-numbered questions (a01, u01, ...), "validation" for the even ones."""
    return "tuning" if int(question["id"][1:]) % 2 else "validation"


def docs_measure() -> dict[str, tuple[dict[str, list[Evidence]], dict[str, tuple[list[str], str]]]]:
    """Click's manual in its own collection; per half, the evidence of its answerable questions and of its
    unanswerable ones (``in_domain`` and ``off_topic`` apart), and the questions asked."""
    archive = docs_corpus.docs_fetch(BASE_DIR / "var/docs-corpus")
    passages = docs_corpus.docs_passages(archive)
    data = docs_questions()
    problems = docs_corpus.questions_check(passages, data)
    if problems:
        raise SystemExit(f"{DOCS_QUESTIONS} does not match the corpus: {'; '.join(problems)}")
    files_ensure(passages, collection=DOCS_COLLECTION)
    signals: dict[str, tuple[dict[str, list[Evidence]], dict[str, tuple[list[str], str]]]] = {}
    for half in ("tuning", "validation"):
        kinds = {
            "answerable": [q for q in data["answerable"] if docs_half(q) == half],
            "in_domain": [q for q in data["unanswerable"] if docs_half(q) == half and q["kind"] == "in_domain"],
            "off_topic": [q for q in data["unanswerable"] if docs_half(q) == half and q["kind"] == "off_topic"],
        }
        asked = {kind: ([q["question"] for q in qs], DOCS_COLLECTION) for kind, qs in kinds.items()}
        signals[half] = ({kind: measure(qs, DOCS_COLLECTION) for kind, (qs, _) in asked.items()}, asked)
    log(f"{DOCS}: {len(data['answerable'])} answerable, {len(data['unanswerable'])} unanswerable measured")
    return signals


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
        choices = {"settings": params.thresholds(reading)}
        if reading in fitted:
            choices["fitted"] = Thresholds(*fitted[reading])
        for name, thresholds in choices.items():
            rows.append(
                {
                    "pair": pair,
                    "reading": reading,
                    "half": half,
                    "split": "tuning" if half == "even" else "validation",
                    "thresholds": name,
                    "questions": len(answerable),
                    "unanswerable_refused": round(refused_by(unanswerable, thresholds), 4),
                    "answerable_refused": round(refused_by(answerable, thresholds), 4),
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
        r: fit([of(r, "even", "answerable")], of(r, "even", "unanswerable"), args.max_wrong) for r in FITTED_READINGS
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
    parser.add_argument(
        "--generate", type=int, default=0, help="end to end, with the generator, on the first N questions of each kind"
    )
    args = parser.parse_args()
    graph_schema_apply(driver=get_driver())
    if args.languages:
        return languages_main(args)
    args.out = args.out or str(BASE_DIR / "benchmarks/results/not_found.json")
    return corpora_main(args)


def end_to_end(sets: Sequence[QuestionSet], thresholds: Thresholds, limit: int) -> list[dict[str, Any]]:
    """The whole decision as an answer meets it, on the first ``limit`` questions of each set and kind: the
    retrieval thresholds, then (for a question they let through) the generator's answer and the checks
    after generation (its own "not found", the short answer's support). The generator is ``auto``'s choice."""
    from apps.answers.answer_text import answer_clean
    from apps.answers.support import answer_refusal, prompt_sources_text
    from apps.models.devices import generator_key
    from apps.models.generator import OFFLINE_GENERATORS, load_offline
    from benchmarks.answer_quality import answer_once

    key = generator_key("auto", settings.MODEL_DEVICE)
    generator = load_offline(OFFLINE_GENERATORS[key], cache_root=settings.MODEL_CACHE_DIR, device=settings.MODEL_DEVICE)
    tools, params = default_tools(), retrieval_params(mode="graph")
    support = evidence_params().min_answer_support
    rows = []
    for qs in sets:
        for kind, (questions, collection) in qs.asked.items():
            outcomes, answers = [], []
            for question in questions[:limit]:
                retrieval = retrieve(question=question, collections=[collection], tools=tools, params=params)
                if not thresholds_met(evidence_measure(question, retrieval.sources), thresholds):
                    outcomes.append("retrieval")
                    answers.append({"question": question, "outcome": "retrieval"})
                    continue
                text = answer_once(generator, retrieval.prompt, 48, attribute=False, question=question)["text"]
                shown = prompt_sources_text(retrieval.prompt.user)
                verdict = answer_refusal(answer_clean(text), shown=shown, question=question, min_support=support)
                outcomes.append(verdict or "answered")
                answers.append({"question": question, "outcome": outcomes[-1], "answer": text})
            refused_share = sum(o != "answered" for o in outcomes) / max(len(outcomes), 1)
            rows.append(
                {
                    "corpus": qs.corpus,
                    "dataset": qs.name,
                    "split": qs.split,
                    "kind": kind,
                    "questions": len(outcomes),
                    "refused": round(refused_share, 4),
                    "by": {o: outcomes.count(o) for o in sorted(set(outcomes))},
                    "generator": OFFLINE_GENERATORS[key].name,
                    "answers": answers,  # what was generated, to read why a question was refused
                }
            )
            log(f"end to end: {qs.name} {kind}: {rows[-1]['by']}")
    return rows


@dataclasses.dataclass(frozen=True)
class QuestionSet:
    """One corpus's questions: the answerable ones' evidence, and the unanswerable ones' by kind."""

    corpus: str  # "wikipedia" or "docs"
    name: str
    split: str  # "tuning" or "validation"
    answerable: list[Evidence]
    unanswerable: dict[str, list[Evidence]]
    asked: dict[str, tuple[list[str], str]]  # "answerable" and each unanswerable kind: the questions, the collection


def unrelated_wikipedia(dataset: str, data_dir: Path, limit: int) -> list[str]:
    """Wikipedia questions this dataset's corpus cannot answer: XQuAD's English questions (SQuAD articles
    that none of the three corpora hold), less those whose answer any of its passages contains, ``limit``
    of them spread evenly over the articles."""
    text = " ".join(body.decode("utf-8").lower() for _, body in eval_corpus(dataset, data_dir))
    squad = json.loads((data_dir / "multilingual/xquad/xquad.en.json").read_text())
    kept = [
        qa["question"]
        for article in squad["data"]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
        if not any(answer["text"].lower() in text for answer in qa["answers"])
    ]
    return kept[:: max(len(kept) // limit, 1)][:limit]


def question_sets(limit: int) -> list[QuestionSet]:
    data_dir = Path(settings.DEMO_DATA_DIR)
    for dataset in DATASETS:
        corpus_ensure(dataset=dataset, data_dir=data_dir)
    sets = []
    for dataset in DATASETS:
        questions = [q.question for q in eval_questions(dataset, data_dir)[:limit]]
        own, other = eval_collection(dataset), eval_collection(FOREIGN[dataset])
        unrelated = unrelated_wikipedia(dataset, data_dir, limit)
        sets.append(
            QuestionSet(
                "wikipedia",
                dataset,
                "tuning" if dataset in TUNING else "validation",
                measure(questions, own),
                {"other_dataset": measure(questions, other), "unrelated_wikipedia": measure(unrelated, own)},
                {
                    "answerable": (questions, own),
                    "other_dataset": (questions, other),
                    "unrelated_wikipedia": (unrelated, own),
                },
            )
        )
        log(f"{dataset}: {len(questions)} questions measured")
    for half, (kinds, asked) in docs_measure().items():
        answerable = kinds.pop("answerable")
        sets.append(QuestionSet(DOCS, f"{docs_corpus.PACKAGE}-{half}", half, answerable, kinds, asked))
    return sets


def set_rows(sets: Sequence[QuestionSet], choices: dict[str, Thresholds]) -> list[dict[str, Any]]:
    rows = []
    for qs in sets:
        for name, thresholds in choices.items():
            every = [e for kind in qs.unanswerable.values() for e in kind]
            rows.append(
                {
                    "corpus": qs.corpus,
                    "dataset": qs.name,
                    "split": qs.split,
                    "thresholds": name,
                    "answerable": len(qs.answerable),
                    "answerable_refused": round(refused_by(qs.answerable, thresholds), 4),
                    "unanswerable": len(every),
                    "unanswerable_refused": round(refused_by(every, thresholds), 4),
                    "unanswerable_refused_by_kind": {
                        k: round(refused_by(v, thresholds), 4) for k, v in qs.unanswerable.items()
                    },
                }
            )
    return rows


def corpora_main(args: argparse.Namespace) -> int:
    load_before = os.getloadavg()
    sets = question_sets(args.limit)
    tuning = [qs for qs in sets if qs.split == "tuning"]
    groups = [qs.answerable for qs in tuning]
    refusable = [e for qs in tuning for kind in qs.unanswerable.values() for e in kind]
    combined = fit_combined(groups, refusable, args.max_wrong)
    either = Thresholds(*fit(groups, refusable, args.max_wrong))
    current = evidence_params().thresholds(SAME)
    choices = {"fitted": combined, "fitted_either": either, "settings": current}
    rows = set_rows(sets, choices)
    whole = end_to_end(sets, combined, args.generate) if args.generate else []
    report = {
        "benchmark": "not_found",
        "command": "make bench-not-found " + " ".join(sys.argv[1:]),
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform()},
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "questions_per_dataset": args.limit,
        "foreign_collection": FOREIGN,
        "docs_corpus": {
            "package": docs_corpus.PACKAGE,
            "version": docs_corpus.VERSION,
            "licence": docs_corpus.LICENCE,
            "collection": DOCS_COLLECTION,
            "questions": str(DOCS_QUESTIONS.relative_to(BASE_DIR)),
        },
        "max_wrong": args.max_wrong,
        "fitted_on": [qs.name for qs in tuning],
        "rules": {
            "fitted": "similarity + coverage_weight * coverage >= min_evidence and similarity >= min_similarity",
            "fitted_either": "similarity >= min_similarity and coverage >= min_coverage (each alone)",
        },
        "thresholds": {name: dataclasses.asdict(t) for name, t in choices.items()},
        "results": rows,
        "end_to_end": {"thresholds": "fitted", "questions_per_kind": args.generate, "results": whole},
        "signals": {
            qs.name: {"answerable": [e.as_dict() for e in qs.answerable]}
            | {kind: [e.as_dict() for e in evidence] for kind, evidence in qs.unanswerable.items()}
            for qs in sets
        },
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    for name, t in choices.items():
        print(f"{name} (fitted on {', '.join(qs.name for qs in tuning)}): {dataclasses.asdict(t)}")
    print("| corpus | questions | split | thresholds | answerable refused | unanswerable refused (by kind) |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        kinds = ", ".join(f"{k} {v:.2f}" for k, v in row["unanswerable_refused_by_kind"].items())
        print(
            f"| {row['corpus']} | {row['dataset']} | {row['split']} | {row['thresholds']} | "
            f"{row['answerable_refused']:.2f} of {row['answerable']} | "
            f"{row['unanswerable_refused']:.2f} of {row['unanswerable']} ({kinds}) |"
        )
    if whole:
        print("\n| corpus | questions | split | kind | asked | refused (how) |\n|---|---|---|---|---|---|")
        for row in whole:
            how = ", ".join(f"{k} {v}" for k, v in row["by"].items())
            print(
                f"| {row['corpus']} | {row['dataset']} | {row['split']} | {row['kind']} | {row['questions']} | "
                f"{row['refused']:.2f} ({how}) |"
            )
    print(f"\nload average before {report['load_average']['before']}, after {report['load_average']['after']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
