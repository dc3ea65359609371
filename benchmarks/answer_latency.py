"""Answering latency: retrieval stages at 100k chunks, idle and beside an ingestion, generation
speed, and 8 concurrent clients.

    make bench-answers                      (a private stack under var/bench-answers, wiped first)
    make bench-answers BENCH_ARGS=--quick   (5k chunks, 20 questions, 15 s of load: a smoke run)

1. Corpus: the MuSiQue and HotpotQA passages ingested with the real pipeline, then bulk filler
   shaped like ingested data up to 100k chunks (benchmarks/answer_corpus.py says how).
2. Retrieval: the 200 MuSiQue and HotpotQA questions, after warm-up questions (XQuAD English),
   through ``apps.answers.pipeline.retrieve`` in graph mode, in this process; p50/p95/max of each
   stage and of stages 1-6 together, in three settings: idle over every collection (an admin),
   idle over one named collection (a reader's scope: the access predicate is applied), and over
   every collection while an ingestion of 2WikiMultihopQA passages runs beside it (a separate
   process niced like the ingest worker, ``RAGKG_INGEST_NICE``). The question embedding on 1 and 2
   ONNX Runtime threads is compared on the same questions, idle and beside the ingestion.
   Target: p50 <= 30 ms and p95 <= 80 ms, idle and beside the ingestion. When missed (or with
   --profile), a profile (stage shares, cProfile of the slowest questions, Neo4j PROFILE of the
   expansion) is added.
3. Generation: the configured generator (``registry.generator().stream``) on prompts the pipeline
   built: time to first token and tokens per second.
4. Load: the Celery worker and gunicorn started (scripts/services.py), 8 clients POST /api/ask
   with generation on, back to back for a minute; sent / answered / failed / lost and the
   latency split (retrieval stages, queue, generation, end to end).

Writes benchmarks/results/answer_latency.json and prints a table.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

import numpy as np
from django.conf import settings
from django.utils import timezone

from apps.accounts.services import collection_ensure
from apps.answers.expansion import expand_parameters
from apps.answers.models import Answer
from apps.answers.pipeline import RetrievalParams, RetrievalTools, retrieve
from apps.answers.scope import EVERY_COLLECTION, Scope
from apps.answers.tools import default_tools, retrieval_params
from apps.answers.types import Retrieval
from apps.graph import cypher
from apps.graph.driver import get_driver
from apps.graph.schema import graph_schema_apply
from apps.ingest.services import extraction_helpers_stop
from apps.models import registry
from benchmarks import cypher as bench_cypher
from benchmarks.answer_corpus import FillerParams, base_files, corpus_build
from benchmarks.answer_load import RETRIEVAL_STAGES, load_run, load_summary, server_split, warm_up
from benchmarks.background_ingest import background_start, background_stop, background_wait_busy

COLLECTION = "bench-answers"
TARGET_P50_MS, TARGET_P95_MS = 30.0, 80.0
INGEST_COLLECTION = "bench-answers-ingest"


@dataclass(frozen=True)
class RunSize:
    name: str
    chunks: int
    musique: int | None  # base passages (None: all)
    hotpotqa: int | None
    questions: int
    warmup: int
    prompts: int
    load_seconds: float
    ingest_passages: int


FULL = RunSize("full", 100_000, None, None, 200, 100, 10, 60.0, 1500)
QUICK = RunSize("quick", 5_000, 300, 150, 20, 5, 3, 15.0, 400)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def quantiles(values: Sequence[float]) -> dict[str, float]:
    array = np.asarray(values, dtype=np.float64)
    return {
        "p50": round(float(np.percentile(array, 50)), 2),
        "p95": round(float(np.percentile(array, 95)), 2),
        "max": round(float(array.max()), 2),
        "mean": round(float(array.mean()), 2),
    }


# --- questions -----------------------------------------------------------------------------


def questions_load(data_dir: Path) -> list[str]:
    """The 100 MuSiQue and 100 HotpotQA questions, in file order."""
    multihop = data_dir / "multihop"
    musique = json.loads((multihop / "hipporag_musique_train.json").read_text())
    hotpotqa = json.loads((multihop / "hipporag_hotpotqa_train.json").read_text())
    return [item["question"] for item in musique] + [item["question"] for item in hotpotqa]


def warmup_load(data_dir: Path, count: int) -> list[str]:
    """Other real questions (XQuAD English), so the measured ones meet no cache of their own."""
    squad = json.loads((data_dir / "multilingual/xquad/xquad.en.json").read_text())
    questions = (qa["question"] for article in squad["data"] for p in article["paragraphs"] for qa in p["qas"])
    return [q for _, q in zip(range(count), questions, strict=False)]


# --- stages 1-6 ------------------------------------------------------------------------------


def total_ms(retrieval: Retrieval) -> float:
    return sum(retrieval.timings_ms.get(stage, 0.0) for stage in RETRIEVAL_STAGES)


class GcPauses:
    """The garbage collector's pauses (ms) by generation while installed (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, float]] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append((info["generation"], (time.perf_counter() - self._started) * 1000))

    def report(self) -> dict[str, dict[str, float]]:
        found = {}
        for generation in (0, 1, 2):
            times = [ms for g, ms in self.pauses if g == generation]
            found[f"generation_{generation}"] = {
                "count": len(times),
                "total_ms": round(sum(times), 1),
                "max_ms": round(max(times, default=0.0), 1),
            }
        return found


def latency_measure(
    questions: Sequence[str],
    tools: RetrievalTools,
    params: RetrievalParams,
    gc_pauses: GcPauses | None = None,
    collections: Scope = EVERY_COLLECTION,
) -> list[tuple[Retrieval, float]]:
    """Each question's retrieval and its wall time (ms) around ``retrieve`` (GC pauses recorded when given).
    The token counts remembered from an earlier pass are forgotten first: each setting asks the same
    questions, and a prompt counted before would cost nothing the second time."""
    forget = getattr(tools.count_tokens, "cache_clear", None)
    if forget is not None:
        forget()
    runs = []
    if gc_pauses is not None:
        gc.callbacks.append(gc_pauses)
    try:
        for question in questions:
            started = time.perf_counter()
            retrieval = retrieve(question=question, collections=collections, tools=tools, params=params)
            runs.append((retrieval, (time.perf_counter() - started) * 1000))
    finally:
        if gc_pauses is not None:
            gc.callbacks.remove(gc_pauses)
    return runs


PER_QUESTION = ("stages_1_6", *RETRIEVAL_STAGES, "cypher_ms", "rows", "reached")


def per_question(retrieval: Retrieval) -> list[float]:
    """One row of ``PER_QUESTION`` for the results file."""
    stats = retrieval.stats
    return [
        round(total_ms(retrieval), 1),
        *(round(retrieval.timings_ms.get(stage, 0.0), 1) for stage in RETRIEVAL_STAGES),
        *(round(float(stats.get(key, 0)), 1) for key in ("cypher_ms", "rows", "reached")),
    ]


def latency_report(
    runs: Sequence[tuple[Retrieval, float]], *, setting: str = "idle, every collection"
) -> dict[str, Any]:
    retrievals = [r for r, _ in runs]
    stages = {stage: quantiles([r.timings_ms.get(stage, 0.0) for r in retrievals]) for stage in RETRIEVAL_STAGES}
    totals = quantiles([total_ms(r) for r in retrievals])
    stats_keys = sorted({k for r in retrievals for k, v in r.stats.items() if isinstance(v, int | float)})
    return {
        "questions": len(runs),
        "setting": setting,
        "load_average": os.getloadavg(),
        "mode": "graph",
        "stages_ms": stages,
        "stages_1_6_ms": totals,
        "wall_ms": quantiles([wall for _, wall in runs]),
        "stats_mean": {k: round(float(np.mean([float(r.stats.get(k, 0)) for r in retrievals])), 2) for k in stats_keys},
        "sources_mean": round(float(np.mean([len(r.sources) for r in retrievals])), 2),
        "prompt_tokens_mean": round(float(np.mean([r.prompt.tokens for r in retrievals])), 1),
        "seeds_mean": round(float(np.mean([len(r.seeds.hits) for r in retrievals])), 1),
        "question_entities_mean": round(float(np.mean([len(r.analysis.entities) for r in retrievals])), 2),
        "graph_expansion_outside_cypher_ms": quantiles(
            [r.timings_ms.get("graph_expansion", 0.0) - float(r.stats.get("cypher_ms", 0.0)) for r in retrievals]
        ),
        "target": {"p50_ms": TARGET_P50_MS, "p95_ms": TARGET_P95_MS},
        "per_question_order": "the questions in file order: MuSiQue, then HotpotQA",
        "per_question_columns": list(PER_QUESTION),
        "per_question": [per_question(r) for r in retrievals],
    }


def latency_met(report: dict[str, Any]) -> bool:
    totals = report["stages_1_6_ms"]
    return bool(totals["p50"] <= TARGET_P50_MS and totals["p95"] <= TARGET_P95_MS)


def beside_ingestion(
    questions: Sequence[str], tools: RetrievalTools, params: RetrievalParams, size: RunSize
) -> tuple[dict[str, Any], dict[str, dict[str, float]], dict[str, Any]]:
    """The questions again while 2Wiki passages are ingested by a separate process at the ingest
    worker's CPU priority (into its own collection); the ingestion is stopped afterwards."""
    out = Path(settings.STATE_DIR) / "background_ingest.json"
    out.unlink(missing_ok=True)
    process = background_start(
        collection=INGEST_COLLECTION, skip=0, passages=size.ingest_passages, out=out, nice=settings.INGEST_NICE
    )
    try:
        background_wait_busy(out, process)
        runs = latency_measure(questions, tools, params)
        threads = query_threads_compare(questions, tools)
        still_running = process.poll() is None
    finally:
        ingestion = background_stop(process, out)
    ingestion |= {"nice": settings.INGEST_NICE, "running_throughout": still_running}
    return latency_report(runs, setting="every collection, beside an ingestion"), threads, ingestion


# --- profile (when the target is missed) -----------------------------------------------------


def _short(path: str) -> str:
    for marker in ("site-packages/", str(BASE_DIR) + "/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def cprofile_top(
    questions: Sequence[str], tools: RetrievalTools, params: RetrievalParams, top: int = 10
) -> dict[str, list[str]]:
    """Over these questions (ms per question): the functions with the most own time, and the
    project's own functions (apps/) by cumulative time."""
    profiler = cProfile.Profile()
    profiler.enable()
    for question in questions:
        retrieve(question=question, collections=EVERY_COLLECTION, tools=tools, params=params)
    profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    rows = []
    for (path, line, name), (_cc, calls, own, cumulative, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append((own, cumulative, calls, f"{_short(path)}:{line}({name})"))
    n = max(1, len(questions))

    def describe(row: tuple[float, float, int, str]) -> str:
        own, cum, calls, where = row
        return f"{where}: own {own * 1000 / n:.1f} ms, cumulative {cum * 1000 / n:.1f} ms, {calls / n:.0f} calls"

    own_time = sorted(rows, reverse=True)[:top]
    project = sorted((r for r in rows if r[3].startswith("apps/")), key=lambda r: -r[1])[:top]
    return {
        "by_own_time": [describe(r) for r in own_time],
        "project_by_cumulative_time": [describe(r) for r in project],
    }


def _expand_parameters(retrieval: Retrieval, params: RetrievalParams) -> dict[str, Any]:
    """The parameters ``graph_expand`` sends for this retrieval's seeds and question entities (every
    linked entity at the best seed's score)."""
    seeds = retrieval.seeds.hits
    start_score = max((seed.score for seed in seeds), default=1.0)
    return expand_parameters(
        seeds=seeds,
        starts={entity: start_score for entity, _ in retrieval.analysis.linked},
        collections=EVERY_COLLECTION,
        params=params.expansion,
    )


def expansion_split(
    retrievals: Sequence[Retrieval], tools: RetrievalTools, params: RetrievalParams
) -> dict[str, dict[str, float]]:
    """ANSWER_EXPAND again for these questions: the client's time against the server's (first
    record available, all consumed), so Neo4j's work and the driver's decoding separate."""
    client, available, consumed, rows = [], [], [], []
    for retrieval in retrievals:
        started = time.perf_counter()
        records, summary, _ = tools.driver.execute_query(
            cypher.ANSWER_EXPAND, parameters_=_expand_parameters(retrieval, params), routing_="r"
        )
        client.append((time.perf_counter() - started) * 1000)
        available.append(float(summary.result_available_after or 0))
        consumed.append(float((summary.result_available_after or 0) + (summary.result_consumed_after or 0)))
        rows.append(float(len(records)))
    return {
        "client_ms": quantiles(client),
        "server_ms (first record available)": quantiles(available),
        "server_ms (last record consumed, paced by the client)": quantiles(consumed),
        "rows": quantiles(rows),
    }


def query_threads_compare(questions: Sequence[str], tools: RetrievalTools) -> dict[str, dict[str, float]]:
    """The question embedding on 1 and 2 ONNX Runtime threads, alternating question by question so both
    see the same machine (empty when the text embedder is not the ONNX one)."""
    with_threads = getattr(tools.text, "with_query_threads", None)
    if with_threads is None:
        return {}
    embedders = {threads: with_threads(threads) for threads in (1, 2)}
    times: dict[int, list[float]] = {threads: [] for threads in embedders}
    for question in questions:
        for threads, embedder in embedders.items():
            started = time.perf_counter()
            embedder.embed_queries([question])
            times[threads].append((time.perf_counter() - started) * 1000)
    return {f"{threads} threads": quantiles(values) for threads, values in times.items()}


def _operators(plan: dict[str, Any]) -> list[dict[str, Any]]:
    details = str(plan.get("args", {}).get("Details", ""))
    found = [
        {
            "operator": plan.get("operatorType", "?"),
            "rows": plan.get("rows", 0),
            "db_hits": plan.get("dbHits", 0),
            "details": details[:110],
        }
    ]
    for child in plan.get("children", []):
        found += _operators(child)
    return found


def expansion_profile(retrieval: Retrieval, tools: RetrievalTools, params: RetrievalParams) -> dict[str, Any]:
    """Neo4j's PROFILE of ANSWER_EXPAND with the parameters ``graph_expand`` sent for this question
    (run twice; the second, with its plan cached, is reported)."""
    for _ in range(2):
        started = time.perf_counter()
        records, summary, _ = tools.driver.execute_query(
            bench_cypher.ANSWER_BENCH_EXPAND_PROFILE, parameters_=_expand_parameters(retrieval, params), routing_="r"
        )
        seconds = time.perf_counter() - started
    operators = _operators(summary.profile or {})
    return {
        "question": retrieval.question,
        "graph_expansion_ms": retrieval.timings_ms.get("graph_expansion"),
        "profiled_run_ms": round(seconds * 1000, 1),
        "rows_returned": len(records),
        "db_hits_total": sum(int(op["db_hits"]) for op in operators),
        "operators_by_db_hits": sorted(operators, key=lambda op: -int(op["db_hits"]))[:12],
    }


def profile_report(
    runs: Sequence[tuple[Retrieval, float]], tools: RetrievalTools, params: RetrievalParams
) -> dict[str, Any]:
    retrievals = [r for r, _ in runs]
    means = {stage: float(np.mean([r.timings_ms.get(stage, 0.0) for r in retrievals])) for stage in RETRIEVAL_STAGES}
    whole = sum(means.values()) or 1.0
    slowest = sorted(retrievals, key=total_ms, reverse=True)[:10]
    slowest_expansion = max(retrievals, key=lambda r: r.timings_ms.get("graph_expansion", 0.0))
    dominant = max(means, key=lambda s: means[s])
    return {
        "dominant_stage": dominant,
        "stage_share_of_mean_total": {s: f"{means[s] / whole:.0%}" for s in RETRIEVAL_STAGES},
        "slowest_questions": [
            {"question": r.question, "total_ms": round(total_ms(r), 1), **r.timings_ms}
            | {key: r.stats.get(key) for key in ("rows", "reached", "entities", "cypher_ms")}
            for r in slowest[:5]
        ],
        "cprofile_10_slowest_questions": cprofile_top([r.question for r in slowest], tools, params),
        "expansion_client_vs_server": expansion_split(retrievals[:50], tools, params),
        "neo4j_profile_slowest_expansion": expansion_profile(slowest_expansion, tools, params),
    }


# --- generation ------------------------------------------------------------------------------


def generation_measure(
    retrievals: Sequence[Retrieval], count: int, max_new_tokens: int, torch_threads: int
) -> dict[str, Any]:
    """Time to first token and tokens per second on ``count`` pipeline prompts spread over the questions,
    with ``torch_threads`` (what a fresh gpu worker process has; ``default_tools`` lowers it for retrieval)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(torch_threads)
    try:
        return _generation_measure(retrievals, count, max_new_tokens) | {"torch_threads": torch_threads}
    finally:
        torch.set_num_threads(before)


def _generation_measure(retrievals: Sequence[Retrieval], count: int, max_new_tokens: int) -> dict[str, Any]:
    generator = registry.generator()
    started = time.perf_counter()
    list(generator.stream("Say hello.", max_new_tokens=4))  # weights and kernels warm, not counted
    log(f"generator warm in {time.perf_counter() - started:.1f} s")
    step = max(1, len(retrievals) // max(1, count))
    picks = [r for r in retrievals[::step] if r.sources][:count]
    rows = []
    for retrieval in picks:
        prompt = retrieval.prompt
        prompt_tokens = int(generator.prompt_inputs(prompt.user, system=prompt.system)["input_ids"].shape[1])
        pieces: list[str] = []
        first: float | None = None
        started = time.perf_counter()
        stream = generator.stream(prompt.user, max_new_tokens=max_new_tokens, system=prompt.system)
        try:
            for piece in stream:
                first = first if first is not None else time.perf_counter() - started
                pieces.append(piece)
        finally:
            stream.close()
        seconds = time.perf_counter() - started
        text = "".join(pieces).strip()
        tokens = len(generator.tokenizer.encode(text, add_special_tokens=False)) if text else 0
        decode = seconds - (first or 0.0)
        rows.append(
            {
                "prompt_tokens": prompt_tokens,
                "new_tokens": tokens,
                "first_token_ms": round((first or 0.0) * 1000, 1),
                "seconds": round(seconds, 2),
                "tokens_per_second": round(tokens / seconds, 2) if seconds else 0.0,
                "decode_tokens_per_second": round((tokens - 1) / decode, 2) if tokens > 1 and decode > 0 else 0.0,
            }
        )
        log(f"generation {len(rows)}/{len(picks)}: {rows[-1]}")
    return {
        "model": generator.name,
        "device": str(getattr(generator, "device", "?")),
        "max_new_tokens": max_new_tokens,
        "prompts": len(rows),
        "first_token_ms": quantiles([r["first_token_ms"] for r in rows]),
        "tokens_per_second": quantiles([r["tokens_per_second"] for r in rows]),
        "decode_tokens_per_second": quantiles([r["decode_tokens_per_second"] for r in rows]),
        "prompt_tokens": quantiles([r["prompt_tokens"] for r in rows]),
        "new_tokens": quantiles([r["new_tokens"] for r in rows]),
        "per_prompt": rows,
        "note": "tokens counted as apps.answers.generation counts them (the answer text re-encoded); "
        "tokens_per_second = tokens / whole generation time (prefill included), decode = after the first token",
    }


# --- concurrency against the private stack ---------------------------------------------------


def services(action: str, names: Sequence[str], extra_env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, str(BASE_DIR / "scripts/services.py"), action, *names],
        cwd=BASE_DIR,
        env={**os.environ, **extra_env},
        check=True,
    )


def load_measure(
    questions: Sequence[str], *, clients: int, seconds: float, max_new_tokens: int, timeout: float
) -> dict[str, Any]:
    """Start the worker and web server, warm them, then ``clients`` concurrent askers for ``seconds``."""
    stack_env = {"ANSWER_MAX_NEW_TOKENS": str(max_new_tokens)}
    url = f"http://{settings.WEB_HOST}:{settings.WEB_PORT}/api/ask"
    started = time.perf_counter()
    services("up", ["celery", "web"], stack_env)
    try:
        up_seconds = time.perf_counter() - started
        started = time.perf_counter()
        warm = warm_up(
            url=url,
            questions=questions[::-1],
            clients=clients,
            generating=settings.GENERATION_CONCURRENCY,
            timeout=timeout,
        )
        warm_seconds = time.perf_counter() - started
        log(f"stack up in {up_seconds:.0f} s, warm in {warm_seconds:.0f} s: {[r.outcome for r in warm]}")
        since = timezone.now()
        started = time.perf_counter()
        replies = load_run(url=url, questions=questions, clients=clients, seconds=seconds, timeout=timeout)
        drain = time.perf_counter() - started - seconds
        answers = list(
            Answer.objects.filter(created_at__gte=since).values_list("id", "state", "created_at", "finished_at")
        )
        stamps = {str(a): (c.timestamp(), f.timestamp() if f else None) for a, _s, c, f in answers}
        summary = load_summary(
            replies,
            seconds=seconds,
            clients=clients,
            drain_seconds=max(0.0, drain),
            extra=server_split(replies, stamps),
        )
    finally:
        services("down", ["web", "celery"], stack_env)
    recorded: dict[str, int] = {}
    for _id, state, _created, _finished in answers:
        recorded[state] = recorded.get(state, 0) + 1
    return {
        **summary,
        "server_answers_by_state": recorded,
        "per_request_timeout_s": timeout,
        "stack": {
            "web_workers": settings.WEB_WORKERS,
            "web_threads": settings.WEB_THREADS,
            "celery_concurrency": settings.CELERY_WORKER_CONCURRENCY,
            "generation_concurrency": settings.GENERATION_CONCURRENCY,
            "worker_queues": list(settings.WORKER_QUEUES),
            "answer_max_new_tokens": max_new_tokens,
            "answer_queue_timeout_s": settings.ANSWER_QUEUE_TIMEOUT,
            "answer_generation_timeout_s": settings.ANSWER_GENERATION_TIMEOUT,
            "startup_seconds": round(up_seconds, 1),
            "warm_up_seconds": round(warm_seconds, 1),
            "warm_up_outcomes": [r.outcome for r in warm],
        },
        # Every request answered or refused as busy at once (503 with Retry-After, then asked again), none lost.
        "met": summary["answered"] > 0 and summary["lost"] == 0 and summary["failed"] == summary["refused_busy"],
        "replies": [
            {"client": r.client, "sent_at": r.sent_at, "seconds": r.seconds, "outcome": r.outcome, "error": r.error}
            | {k: r.timings_ms.get(k) for k in ("queue", "generation")}
            for r in replies
        ],
    }


# --- report --------------------------------------------------------------------------------


def table_print(report: dict[str, Any]) -> None:
    settings_ = {
        "idle": report["latency"],
        "one coll.": report["latency_one_collection"],
        "ingesting": report["latency_beside_ingestion"],
    }
    latency = report["latency"]
    print(f"\nretrieval, {latency['questions']} questions at {report['corpus']['graph']['nodes'].get('Chunk')} chunks")
    print(f"{'stage':<18}" + "".join(f"{name + ' p50':>16}{'p95':>8}" for name in settings_))
    for stage in [*latency["stages_ms"], "stages 1-6"]:
        cells = []
        for data in settings_.values():
            q = data["stages_1_6_ms"] if stage == "stages 1-6" else data["stages_ms"][stage]
            cells.append(f"{q['p50']:>16.1f}{q['p95']:>8.1f}")
        print(f"{stage:<18}" + "".join(cells))
    for name, data in settings_.items():
        verdict = "met" if latency_met(data) else "MISSED"
        target = f"p50 <= {TARGET_P50_MS:g} / p95 <= {TARGET_P95_MS:g} ms"
        print(f"{name}: target {target} {verdict}; load average {data['load_average']}")
    print(f"ingestion beside: {report['latency_beside_ingestion']['ingestion']}")
    print(f"query embedding by threads: {report['query_embedding_by_threads']}")
    print(f"stats (mean): {latency['stats_mean']}")
    print(f"GC pauses while measuring: {latency.get('gc_pauses_during_run')}")
    profile = report.get("profile")
    if profile:
        print(f"dominant stage: {profile['dominant_stage']}, shares {profile['stage_share_of_mean_total']}")
    gen = report.get("generation")
    if gen:
        print(
            f"\ngeneration ({gen['model']}, {gen['prompts']} prompts, "
            f"~{gen['prompt_tokens']['p50']:.0f} prompt tokens): "
            f"first token p50 {gen['first_token_ms']['p50']:.0f} ms, {gen['tokens_per_second']['p50']:.1f} tok/s "
            f"({gen['decode_tokens_per_second']['p50']:.1f} tok/s decoding)"
        )
    load = report.get("concurrency")
    if load:
        print(
            f"\n{load['clients']} clients for {load['seconds_sending']:g} s: sent {load['sent']}, answered "
            f"{load['answered']}, failed {load['failed']} (of which refused as busy {load['refused_busy']}), "
            f"lost {load['lost']} "
            f"({load['answers_per_minute']} answers/min)"
        )
        for key, q in load["split_ms"].items():
            if q:
                print(f"  {key:<50} p50 {q['p50']:>9.1f}  p95 {q['p95']:>9.1f} ms")
        if load["errors"]:
            print(f"  errors: {load['errors']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run: 5k chunks, 20 questions, 15 s of load")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--load-seconds", type=float, default=None)
    parser.add_argument("--load-max-new-tokens", type=int, default=64, help="ANSWER_MAX_NEW_TOKENS of the stack")
    parser.add_argument("--request-timeout", type=float, default=300.0)
    parser.add_argument("--skip-load", action="store_true", help="no Celery worker and web server phase")
    parser.add_argument("--profile", action="store_true", help="add the profile even when the target is met")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    size = QUICK if args.quick else FULL
    default_out = Path(settings.STATE_DIR) / "answer_latency_quick.json"  # a smoke run keeps the results file
    out = Path(args.out or (default_out if args.quick else BASE_DIR / "benchmarks/results/answer_latency.json"))
    data_dir = Path(settings.DEMO_DATA_DIR)
    driver = get_driver()
    began = time.perf_counter()
    graph_schema_apply(driver=driver)

    files = base_files(data_dir, musique=size.musique, hotpotqa=size.hotpotqa)
    corpus = corpus_build(
        driver=driver, files=files, params=FillerParams(target_chunks=size.chunks, collection=COLLECTION), log=log
    )
    extraction_helpers_stop()  # their cores are free while measuring
    log(f"corpus: {json.dumps(corpus['graph'])}")

    import torch

    process_threads = torch.get_num_threads()  # before default_tools sets ANSWER_TORCH_THREADS
    tools, params = default_tools(), retrieval_params(mode="graph")
    questions = questions_load(data_dir)[: size.questions]
    warm_seconds = time.perf_counter()
    latency_measure(warmup_load(data_dir, size.warmup), tools, params)
    log(f"retrieval warm-up ({size.warmup} questions) {time.perf_counter() - warm_seconds:.1f} s")
    gc_pauses = GcPauses()
    runs = latency_measure(questions, tools, params, gc_pauses)
    latency = latency_report(runs) | {"gc_pauses_during_run": gc_pauses.report()}
    log(f"retrieval stages 1-6, idle: {latency['stages_1_6_ms']}")
    latency_measure(warmup_load(data_dir, 3), tools, params, collections=[COLLECTION])  # its plans compiled
    scoped_runs = latency_measure(questions, tools, params, collections=[COLLECTION])
    scoped = latency_report(scoped_runs, setting=f"idle, one collection ({COLLECTION}): the access predicate applied")
    log(f"retrieval stages 1-6, one collection: {scoped['stages_1_6_ms']}")
    threads_idle = query_threads_compare(questions, tools)
    beside, threads_beside, ingestion = beside_ingestion(questions, tools, params, size)
    log(f"retrieval stages 1-6 beside an ingestion: {beside['stages_1_6_ms']} ({ingestion})")
    met = latency_met(latency) and latency_met(beside)
    profile = profile_report(runs, tools, params) if args.profile or not met else None

    generation = generation_measure([r for r, _ in runs], size.prompts, settings.ANSWER_MAX_NEW_TOKENS, process_threads)
    concurrency = None
    if not args.skip_load:
        collection_ensure(name=COLLECTION, public=True)  # the load's clients ask without logging in
        concurrency = load_measure(
            questions_load(data_dir),
            clients=args.clients,
            seconds=args.load_seconds or size.load_seconds,
            max_new_tokens=args.load_max_new_tokens,
            timeout=args.request_timeout,
        )
    report = {
        "benchmark": "answer_latency",
        "run": size.name,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "seconds": round(time.perf_counter() - began, 1),
        "neo4j": {"heap": settings.NEO4J_HEAP, "page_cache": settings.NEO4J_PAGE_CACHE},
        "retrieval_params": {
            "k_chunks": params.seeds.k_chunks,
            "hops": params.expansion.hops,
            "fanout": params.expansion.fanout,
            "related_fanout": params.expansion.related_fanout,
            "max_entities": params.expansion.max_entities,
            "max_degree": params.expansion.max_degree,
            "rerank_pool": params.rerank_pool,
            "reranker": "stored-vector cosine" if tools.reranker is None else tools.reranker.name,
            "text_embedder": tools.text.name,
            "torch_threads": getattr(settings, "ANSWER_TORCH_THREADS", None),
            "query_threads": getattr(tools.text, "query_threads", None),
        },
        "corpus": corpus,
        "latency": latency,
        "latency_one_collection": scoped,
        "latency_beside_ingestion": beside | {"ingestion": ingestion},
        "query_embedding_by_threads": {"idle": threads_idle, "beside_ingestion": threads_beside},
        "profile": profile,
        "generation": generation,
        "concurrency": concurrency,
        "targets": {
            "retrieval_p50_le_30ms_p95_le_80ms_idle": latency_met(latency),
            "retrieval_p50_le_30ms_p95_le_80ms_beside_ingestion": latency_met(beside),
            "concurrency_every_answer": None if concurrency is None else concurrency["met"],
        },
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    table_print(report)
    print(f"\nwritten to {out} ({report['seconds']:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
