"""The question path's first stages, part by part, on 200 English multi-hop questions and 100
Chinese XQuAD questions (no services).

    make bench-analysis

Times one line at a time, in the answering process's setting (its tools loaded, one thread for
the query session): langid.classify against the app's sparse language decision, entity names
(spaCy's NER for English, rjieba's tags for Chinese), the generator's tokenizer, the query
embedding (MiniLM for English, multilingual-e5-small, the multilingual space, for Chinese), and
analysis plus embedding one after the other against the app's way (entity names found in a helper
thread while the question embeds). The first question of each language is timed apart, before
anything is warm (spaCy's pipeline and rjieba's dictionary load then). Writes
benchmarks/results/question_analysis.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

from django.conf import settings

from apps.answers.analysis import PendingEntities, query_analyse, question_entities
from apps.answers.evaluation import eval_questions
from apps.answers.pipeline import RetrievalTools
from apps.answers.tools import default_tools
from apps.core.language import detect_language
from apps.vectors.spaces import MULTILINGUAL, TEXT


def timed(call: Callable[[str], object], questions: list[str]) -> dict[str, float]:
    timings = []
    for question in questions:
        started = time.perf_counter()
        call(question)
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return {"p50_ms": round(statistics.median(timings), 3), "p95_ms": round(timings[int(0.95 * (len(timings) - 1))], 3)}


def first_call(call: Callable[[str], object], question: str) -> float:
    started = time.perf_counter()
    call(question)
    return round((time.perf_counter() - started) * 1000, 1)


def parts_timed(tools: RetrievalTools, questions: list[str], space: str) -> dict[str, dict[str, float]]:
    import langid

    model = tools.ner_model
    embedder = tools.embedder(space)

    def names(question: str) -> None:
        question_entities(question, model=model or "")

    def sequential(question: str) -> None:
        query_analyse(question=question, tokenize=tools.tokenize, ner_model=model)
        embedder.embed_queries([question])

    def overlapped(question: str) -> None:
        pending = PendingEntities(question, model=model)
        query_analyse(question=question, tokenize=tools.tokenize, ner_model=None)
        embedder.embed_queries([question])
        pending.result()

    for warm in (sequential, overlapped, langid.classify):
        warm(questions[0])
    return {
        "langid.classify": timed(langid.classify, questions),
        "detect_language (the app's)": timed(detect_language, questions),
        "entity names (spaCy NER; rjieba for Chinese)": timed(
            lambda q: question_entities(q, model=model or ""), questions
        ),
        "tokenize": timed(tools.tokenize, questions),
        f"query embedding ({embedder.name})": timed(lambda q: embedder.embed_queries([q]), questions),
        "analysis + embedding, one after the other": timed(sequential, questions),
        "analysis + embedding, entities in a helper thread (the app's)": timed(overlapped, questions),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(BASE_DIR / "benchmarks/results/question_analysis.json"))
    args = parser.parse_args()
    import langid

    tools = default_tools()
    data_dir = Path(settings.DEMO_DATA_DIR)
    english = [q.question for dataset in ("musique", "hotpotqa") for q in eval_questions(dataset, data_dir)[:100]]
    chinese = [q.question for q in eval_questions("xquad-zh-zh", data_dir)[:100]]
    model = tools.ner_model
    for space in (TEXT, MULTILINGUAL):  # the embedders load before the first calls are timed
        tools.embedder(space).embed_queries(["warm"])
    first = {  # nothing of analysis warm yet: rjieba's dictionary, spaCy's pipeline load now
        "chinese": first_call(
            lambda q: query_analyse(question=q, tokenize=tools.tokenize, ner_model=model), chinese[0]
        ),
        "english": first_call(
            lambda q: query_analyse(question=q, tokenize=tools.tokenize, ner_model=model), english[0]
        ),
    }
    load = [round(x, 2) for x in os.getloadavg()]
    parts = parts_timed(tools, english, TEXT)
    parts_chinese = parts_timed(tools, chinese, MULTILINGUAL)
    agree = sum(detect_language(q) == langid.classify(q)[0] for q in english)
    report = {
        "benchmark": "question_analysis",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
        "questions": {"english": len(english), "chinese": len(chinese)},
        "text_embedder": tools.text.name,
        "language_agrees_with_langid": agree,
        "chinese_detected_zh": sum(detect_language(q) == "zh" for q in chinese),
        "load_average": {"start": load, "end": [round(x, 2) for x in os.getloadavg()]},
        "first_call_ms": first,
        "parts": parts,
        "parts_chinese": parts_chinese,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"first call (cold analysis): {first}")
    for title, rows in (("English (200 multi-hop questions)", parts), ("Chinese (100 XQuAD questions)", parts_chinese)):
        print(title)
        for name, row in rows.items():
            print(f"  {name:64} p50 {row['p50_ms']:7.2f} ms  p95 {row['p95_ms']:7.2f} ms")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
