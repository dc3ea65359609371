"""Answer quality and speed of every offline generator, with the pipeline's retrieval and with gold passages.

    make bench-answer-quality                      (all generators, all datasets, both retrievals)
    make bench-answer-quality BENCH_ARGS="--limit 20 --models qwen2.5-0.5b --retrieval gold"

For each generator (``RAGKG_GENERATOR``'s choices), dataset (the HotpotQA and MuSiQue samples the
settings are tuned on; 2WikiMultihopQA dev300, the validation set) and retrieval:
- ``gold``: the question's supporting passages plus one that does not support the answer, in an
  order fixed by the question id (reading alone);
- ``pipeline``: stages 1-6 against the dataset's corpus, ingested into its own collection of a
  private Neo4j (state under var/bench-multihop, shared with ``make bench-multihop``);
- ``foreign``: stages 1-6 against another dataset's collection, which does not hold the answer
  (``apps.answers.evaluate.FOREIGN``): every answer should be "Not found in your documents";
the prompt is the one the app builds (``apps.answers.prompt``), generation the app's streaming
generator, and fast attribution the app's. Reported per run: exact match, token F1 and "answer
contains the gold" of the short answer (the first line), time to first token, time to the short
answer, generation and attribution time, prompt tokens, answer tokens and decoding speed, plus
the load average. "Not found" is decided as the app decides it (``apps.answers.support``: the retrieval
thresholds before generation, then the generator's own refusal or an unsupported short answer); a
refused answer scores 0, and ``refused`` is the share refused. Writes
benchmarks/results/answer_quality.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

from django.conf import settings

from apps.answers.answer_text import answer_clean, lines_written, short_answer
from apps.answers.evaluate import FOREIGN
from apps.answers.evaluation import EvalQuestion, eval_questions, exact_match, f1_score, normalise_answer
from apps.answers.prompt import NOT_FOUND, ExcerptParams, prompt_assemble
from apps.answers.services import evidence_params
from apps.answers.support import (
    answer_refusal,
    avoid_first,
    evidence_measure,
    evidence_sufficient,
    prompt_sources_text,
)
from apps.answers.types import Prompt, Source
from apps.ingest.chunking import split_sentences
from apps.models.devices import cpu_has_bf16, generator_key, generator_precision
from apps.models.generator import OFFLINE_GENERATORS, HFGenerator, load_offline
from apps.models.interfaces import AnswerEngine
from apps.models.openai_engine import EngineSettings, OpenAIEngine
from apps.provenance.citations import cite
from apps.provenance.fast import FastAttributor, calibrated_params
from apps.provenance.layout import layout_build
from apps.provenance.units import source_units, unit_texts

DATASETS = ("hotpotqa", "musique", "2wiki")
RETRIEVALS = ("gold", "pipeline", "foreign")


EVIDENCE = evidence_params()  # the app's thresholds


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def gold_sources(question: EvalQuestion) -> list[Source]:
    """The gold passages as ingested chunks would be ("Title\\n\\nText", sentence offsets), shuffled
    by the question id so the supporting ones are not always first."""
    passages = list(question.gold)
    random.Random(question.id).shuffle(passages)
    sources = []
    for number, (title, text) in enumerate(passages, start=1):
        body = f"{title}\n\n{text}"
        spans = tuple(split_sentences(body))
        sources.append(
            Source(number, f"gold-{number}", "chunk", f"doc-{number}", f"{title}.txt", "gold", body, "", 1.0, (), spans)
        )
    return sources


class PipelinePrompts:
    """Stages 1-6 against each dataset's ingested collection (a private Neo4j and FAISS)."""

    def __init__(self, k_max: int | None = None, excerpt: ExcerptParams | None = None) -> None:
        from apps.answers.evaluate import corpus_ensure, eval_collection
        from apps.answers.tools import default_tools, retrieval_params
        from apps.graph.driver import get_driver
        from apps.graph.schema import graph_schema_apply

        graph_schema_apply(driver=get_driver())
        self._ensure = corpus_ensure
        self._collection = eval_collection
        self._tools = default_tools()
        params = retrieval_params(mode="graph")
        if k_max is not None:  # fewer sources: a shorter prompt, read sooner
            k_max = max(params.selection.k_min, k_max)
            params = dataclasses.replace(params, selection=dataclasses.replace(params.selection, k_max=k_max))
        self._params = params
        self.k_max = params.selection.k_max
        self.excerpt = excerpt  # None: the app's (apps.answers.prompt.ExcerptParams())
        self._ready: set[str] = set()

    def prompt(self, dataset: str, question: EvalQuestion) -> tuple[Prompt, float, bool]:
        """The prompt, the retrieval's milliseconds, and whether its evidence is enough to generate."""
        from apps.answers.pipeline import retrieve

        if dataset not in self._ready:
            self._ensure(dataset=dataset, data_dir=Path(settings.DEMO_DATA_DIR))
            self._ready.add(dataset)
        retrieval = retrieve(
            question=question.question, collections=[self._collection(dataset)], tools=self._tools, params=self._params
        )
        enough = evidence_sufficient(evidence_measure(question.question, retrieval.sources), EVIDENCE)
        prompt = retrieval.prompt
        if self.excerpt is not None:  # the same sources, other sentences of each shown
            count = self._tools.count_tokens
            prompt = prompt_assemble(
                question=question.question, sources=retrieval.sources, count_tokens=count, params=self.excerpt
            )
        return prompt, sum(retrieval.timings_ms.values()), enough


NOT_GENERATED = {
    "cited": [],
    "text": "",
    "first_token_s": 0.0,
    "short_answer_s": 0.0,
    "generation_s": 0.0,
    "attribution_s": 0.0,
    "total_s": 0.0,
    "answer_tokens": 0,
    "tokens_per_second": 0.0,
}


def answer_once(
    generator: HFGenerator,
    prompt: Prompt,
    max_new_tokens: int,
    *,
    attribute: bool = True,
    question: str = "",
    engine: AnswerEngine | None = None,
    reader_prefill: bool = True,
) -> dict[str, Any]:
    """Stream one answer as the worker does (from ``engine`` when given, else ``generator`` in this
    process); time the first piece, the short answer (the first line break) and the end; then time fast
    attribution by ``generator`` over it, counted from the last token. With an engine, the reader starts
    on the prompt while the engine writes (``reader_prefill``), as the worker does."""
    writer: AnswerEngine = engine or generator
    prefill = None
    if engine is not None and attribute and reader_prefill:
        prefill = threading.Thread(
            target=generator.prompt_prefill, args=(prompt.user,), kwargs={"system": prompt.system}
        )
        prefill.start()
    started = time.perf_counter()
    first = short = None
    pieces: list[str] = []
    lines = 0 if settings.ANSWER_SUPPORT_SENTENCE else 1  # as the worker stops (apps.answers.generation)
    stream = writer.stream(
        prompt.user, system=prompt.system, max_new_tokens=max_new_tokens, avoid_first=avoid_first(question)
    )
    try:
        for piece in stream:
            now = time.perf_counter() - started
            first = now if first is None else first
            pieces.append(piece)
            if short is None and lines_written("".join(pieces)) >= 1:
                short = now
            if lines and lines_written("".join(pieces)) >= lines:
                break
    finally:
        stream.close()
    generated = time.perf_counter() - started
    text = "".join(pieces).strip()
    tokens = len(generator.tokenizer.encode(text, add_special_tokens=False)) if text else 0
    attribution, cited = 0.0, []
    if attribute:
        attribution_started = time.perf_counter()
        if prefill is not None:
            prefill.join()
        cited = attribute_citations(generator, prompt, text)
        attribution = time.perf_counter() - attribution_started
    return {
        "text": text,
        "first_token_s": first if first is not None else generated,
        "short_answer_s": short if short is not None else generated,
        "generation_s": generated,
        "attribution_s": attribution,
        "total_s": generated + attribution,
        "answer_tokens": tokens,
        "tokens_per_second": (tokens - 1) / (generated - first) if first is not None and tokens > 1 else 0.0,
        "cited": cited,
    }


def attribute_citations(generator: HFGenerator, prompt: Prompt, text: str) -> list[list[int]]:
    """Fast attribution of ``text`` as the worker runs it; the source numbers each sentence cites."""
    text = answer_clean(text)  # what the worker attributes
    if not text:
        return []
    stored = [source.as_dict() for source in prompt.sources]
    units = source_units(stored)
    layout = layout_build(
        tokenizer=generator.tokenizer, system=prompt.system, user=prompt.user, answer=text, sources=stored, units=units
    )
    method = FastAttributor(calibrated_params(generator.name, settings.PROVENANCE_LEXICAL_WEIGHT))
    attribution = method.attribute(
        generator=generator, layout=layout, answer=text, unit_texts=unit_texts(stored, units)
    )
    return [list(citation["sources"]) for citation in cite(text, attribution).citations]


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]) if ordered else 0.0


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    def mean(key: str) -> float:
        return round(statistics.fmean(row[key] for row in rows), 4)

    generated = [row for row in rows if row["refused"] != "retrieval"]  # timings: answers that were generated

    def p50(key: str) -> float:
        return round(float(statistics.median(row[key] for row in generated)), 3) if generated else 0.0

    return {
        "questions": len(rows),
        "exact_match": mean("em"),
        "f1": mean("f1"),
        "contains": mean("contains"),
        "refused": round(sum(bool(row["refused"]) for row in rows) / len(rows), 4),
        "refused_by_retrieval": round(sum(row["refused"] == "retrieval" for row in rows) / len(rows), 4),
        "first_token_p50_s": p50("first_token_s"),
        "short_answer_p50_s": p50("short_answer_s"),
        "generation_p50_s": p50("generation_s"),
        "attribution_p50_s": p50("attribution_s"),
        "total_p50_s": p50("total_s"),
        "total_p95_s": round(quantile([row["total_s"] for row in generated], 0.95), 3),
        "prompt_tokens_mean": round(statistics.fmean(row["prompt_tokens"] for row in rows), 1),
        "answer_tokens_mean": round(statistics.fmean(row["answer_tokens"] for row in rows), 1),
        "tokens_per_second_p50": p50("tokens_per_second"),
        "retrieval_p50_ms": p50("retrieval_ms"),
    }


def run(
    *,
    generator: HFGenerator,
    dataset: str,
    retrieval: str,
    questions: Sequence[EvalQuestion],
    pipeline: PipelinePrompts | None,
    max_new_tokens: int,
    engine: AnswerEngine | None = None,
    reader_prefill: bool = True,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    count = generator.tokenizer
    rows = []
    for question in questions:
        enough = True
        if retrieval == "gold":
            sources = gold_sources(question)
            prompt = prompt_assemble(
                question=question.question, sources=sources, count_tokens=lambda t: len(count.encode(t))
            )
            retrieval_ms = 0.0
        else:
            assert pipeline is not None
            searched = FOREIGN[dataset] if retrieval == "foreign" else dataset
            prompt, retrieval_ms, enough = pipeline.prompt(searched, question)
        prompt_tokens = int(generator.prompt_inputs(prompt.user, system=prompt.system)["input_ids"].shape[1])
        if enough:
            result = answer_once(
                generator,
                prompt,
                max_new_tokens,
                attribute=retrieval != "foreign",
                question=question.question,
                engine=engine,
                reader_prefill=reader_prefill,
            )
            refusal = answer_refusal(
                answer_clean(result["text"]),
                shown=prompt_sources_text(prompt.user),
                question=question.question,
                min_support=EVIDENCE.min_answer_support,
            )
        else:
            result, refusal = dict(NOT_GENERATED), "retrieval"
        short = NOT_FOUND if refusal else short_answer(result["text"])
        gold = [normalise_answer(answer) for answer in question.answers]
        rows.append(
            {
                "id": question.id,
                "question": question.question,
                "gold": question.answers[0],
                "short": short,
                "refused": refusal,
                **result,
                "em": exact_match(short, question.answers),
                "f1": f1_score(short, question.answers),
                "contains": float(
                    not refusal and any(answer and answer in normalise_answer(result["text"]) for answer in gold)
                ),
                "prompt_tokens": prompt_tokens,
                "retrieval_ms": retrieval_ms,
            }
        )
        row = rows[-1]
        log(f"{dataset} {retrieval} {question.id}: {row['short']!r} (gold {row['gold']!r}, refused {refusal or '-'})")
    return summary(rows), rows


def markdown(results: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| generator | dataset | retrieval | n | EM | F1 | contains | not found | TTFT p50 | short p50 | "
        "total p50 (+attr) | prompt tok | tok/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        s = r["summary"]
        retrieval = r["retrieval"] + (f" (k≤{r['k_max']})" if r.get("k_max") else "")
        retrieval += " excerpt " + "/".join(map(str, r["excerpt"])) if r.get("excerpt") else ""
        lines.append(
            f"| {r['generator']} {r['dtype']} {r.get('engine', 'in-process')} | {r['dataset']} | {retrieval} | "
            f"{s['questions']} | "
            f"{s['exact_match']:.2f} | {s['f1']:.2f} | {s['contains']:.2f} | {s['refused']:.2f} | "
            f"{s['first_token_p50_s']:.2f} s | "
            f"{s['short_answer_p50_s']:.2f} s | {s['total_p50_s']:.2f} s | {s['prompt_tokens_mean']:.0f} | "
            f"{s['tokens_per_second_p50']:.1f} |"
        )
    return "\n".join(lines)


def engine_start(key: str) -> tuple[subprocess.Popen[bytes], OpenAIEngine]:
    """llama.cpp's server on ``key``'s GGUF in a process of its own (``manage.py engine_serve``), and an
    engine on it; the server uses every core, as ``make up`` starts it."""
    from tests.support import free_port

    port = free_port()
    log_file = open(BASE_DIR / "var" / f"bench-engine-{port}.log", "wb")  # noqa: SIM115 (the child's)
    process = subprocess.Popen(
        [sys.executable, str(BASE_DIR / "manage.py"), "engine_serve", "--model", key, "--port", str(port)],
        cwd=BASE_DIR,
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 300
    while True:
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the engine server did not start; see {log_file.name}") from None
            time.sleep(0.5)
    log(f"llama.cpp server for {OFFLINE_GENERATORS[key].name} at {url}")
    return process, OpenAIEngine(EngineSettings(urls=(url,), read_timeout=300), token_ids=_first_tokens(key))


def _first_tokens(key: str) -> Any:
    from apps.models.generator import first_token_ids, load_offline_tokenizer

    tokenizer = load_offline_tokenizer(OFFLINE_GENERATORS[key], cache_root=settings.MODEL_CACHE_DIR)
    return lambda words: first_token_ids(tokenizer, words)


def engines_agreement(details: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each run answered by both engines: how often the llama.cpp server's answer, short answer and
    citations equal the in-process generator's on the same question."""
    runs: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for detail in details:
        key = (detail["generator"], detail["dataset"], detail["retrieval"], detail["k_max"], detail["excerpt"])
        runs.setdefault(key, {})[detail["engine"]] = {row["id"]: row for row in detail["answers"]}
    agreement = []
    for (generator, dataset, retrieval, k_max, excerpt), engines in runs.items():
        other = next((name for name in engines if name.startswith("llamacpp")), None)
        if "in-process" not in engines or other is None:
            continue
        pairs = [(row, engines[other][qid]) for qid, row in engines["in-process"].items() if qid in engines[other]]
        generated = [(a, b) for a, b in pairs if a["refused"] != "retrieval"]
        agreement.append(
            {
                "generator": generator,
                "dataset": dataset,
                "retrieval": retrieval,
                "k_max": k_max,
                "excerpt": excerpt,
                "questions": len(generated),
                "same_text": _share(generated, lambda a, b: a["text"] == b["text"]),
                "same_short": _share(generated, lambda a, b: a["short"] == b["short"]),
                "same_citations": _share(generated, lambda a, b: a["cited"] == b["cited"]),
                "different": [
                    {"id": a["id"], "in_process": a["text"], "llamacpp": b["text"]}
                    for a, b in generated
                    if a["text"] != b["text"]
                ],
            }
        )
    return agreement


def _share(pairs: Sequence[tuple[dict[str, Any], dict[str, Any]]], same: Any) -> float:
    return round(sum(bool(same(a, b)) for a, b in pairs) / len(pairs), 4) if pairs else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--models", default=",".join(OFFLINE_GENERATORS), help="RAGKG_GENERATOR keys (auto: this machine's)"
    )
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--retrieval", default=",".join(RETRIEVALS), help="gold, pipeline or both")
    parser.add_argument("--limit", type=int, default=30, help="questions per dataset (the first N)")
    parser.add_argument("--max-new-tokens", type=int, default=settings.ANSWER_MAX_NEW_TOKENS)
    parser.add_argument(
        "--k-max", default=str(settings.ANSWER_K_MAX), help="comma-separated ANSWER_K_MAX values for pipeline retrieval"
    )
    parser.add_argument(
        "--excerpt",
        default="",
        help="comma-separated BEST/NEIGHBOURS/MOST sentence selections of each source to compare (default: the app's)",
    )
    parser.add_argument(
        "--dtypes",
        default=settings.GENERATOR_DTYPE,
        help="comma-separated RAGKG_GENERATOR_DTYPE values to compare (auto, float32, bfloat16, float16, int8)",
    )
    parser.add_argument(
        "--engines",
        default="in-process",
        help="comma-separated: in-process (transformers in this process) and/or llamacpp (llama.cpp's server on the "
        "same GGUF, in a process of its own; the local model reads its answers for attribution, starting on the "
        "prompt while the server writes) and llamacpp:after (the same, the prompt read after the last token)",
    )
    parser.add_argument(
        "--no-reader-prefill", action="store_true", help="with an engine server: the reader reads the prompt at the end"
    )
    parser.add_argument("--out", default=str(BASE_DIR / "benchmarks/results/answer_quality.json"))
    args = parser.parse_args()
    import torch

    generation_threads = torch.get_num_threads()  # torch's default, as in a Celery generation process
    retrievals = [r for r in args.retrieval.split(",") if r]
    k_maxes = [int(k) for k in args.k_max.split(",") if k]
    excerpts: list[ExcerptParams | None] = [
        ExcerptParams(*(int(n) for n in e.split("/"))) for e in args.excerpt.split(",") if e
    ] or [None]
    pipelines = [PipelinePrompts(k, e) for k in k_maxes for e in excerpts] if set(retrievals) - {"gold"} else []
    # Generation as the gpu worker runs it: torch's default thread count (one per core); retrieval
    # (default_tools) set the answering processes' ANSWER_TORCH_THREADS.
    torch.set_num_threads(generation_threads)
    data_dir = Path(settings.DEMO_DATA_DIR)
    questions = {d: eval_questions(d, data_dir)[: args.limit] for d in args.datasets.split(",") if d}
    load_before = os.getloadavg()
    results, details = [], []
    keys = [generator_key(m, settings.MODEL_DEVICE) for m in args.models.split(",") if m]
    for key, dtype in [(k, d) for k in keys for d in args.dtypes.split(",") if d]:
        model = OFFLINE_GENERATORS[key]
        started = time.perf_counter()
        generator = load_offline(model, cache_root=settings.MODEL_CACHE_DIR, device=settings.MODEL_DEVICE, dtype=dtype)
        precision = generator_precision(generator.device, dtype)
        log(f"{model.name} loaded in {time.perf_counter() - started:.1f}s ({precision})")
        warm = prompt_assemble(question="Warm-up?", sources=[], count_tokens=len)
        for engine_name in [e for e in args.engines.split(",") if e]:
            server = engine_start(key) if engine_name.startswith("llamacpp") else None
            reader_prefill = engine_name != "llamacpp:after" and not args.no_reader_prefill
            engine = server[1] if server else None
            answer_once(generator, warm, 4, engine=engine)
            try:
                for dataset, items in questions.items():
                    for retrieval in retrievals:
                        for pipeline in pipelines if retrieval != "gold" else [None]:
                            summary_, rows = run(
                                generator=generator,
                                dataset=dataset,
                                retrieval=retrieval,
                                questions=items,
                                pipeline=pipeline,
                                max_new_tokens=args.max_new_tokens,
                                engine=engine,
                                reader_prefill=reader_prefill,
                            )
                            k_max = pipeline.k_max if pipeline else None
                            excerpt = dataclasses.astuple(pipeline.excerpt) if pipeline and pipeline.excerpt else None
                            log(
                                f"{key} {engine_name} {dataset} {retrieval} k_max={k_max} excerpt={excerpt}: {summary_}"
                            )
                            entry: dict[str, Any] = {"generator": key, "model": model.name, "dtype": precision}
                            entry |= {"engine": engine_name, "dataset": dataset, "retrieval": retrieval}
                            entry |= {"k_max": k_max, "excerpt": excerpt}
                            results.append({**entry, "summary": summary_})
                            details.append({**entry, "answers": rows})
            finally:
                if server:
                    server[0].terminate()
                    server[0].wait(timeout=30)
        del generator
    report = {
        "benchmark": "answer_quality",
        "command": "make bench-answer-quality " + " ".join(sys.argv[1:]),
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform()},
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "torch_threads": __import__("torch").get_num_threads(),
        "cpu_bf16": cpu_has_bf16(),
        "max_new_tokens": args.max_new_tokens,
        "results": results,
    }
    report["engine_agreement"] = engines_agreement(details)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    out.with_name(out.stem + "_answers.json").write_text(json.dumps(details, indent=1) + "\n")
    print(markdown(results))
    for row in report["engine_agreement"]:
        print(
            f"{row['generator']} {row['dataset']} {row['retrieval']}: llamacpp vs in-process, same answer "
            f"{row['same_text']:.2f}, same short answer {row['same_short']:.2f}, "
            f"same citations {row['same_citations']:.2f} (n={row['questions']})"
        )
    print(f"\nload average before {report['load_average']['before']}, after {report['load_average']['after']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
