"""A realistic request mix at stepped, open-loop rates against a running stack on 127.0.0.1.

    make bench-load                      (a private stack under var/bench-load, wiped first)
    make bench-load BENCH_ARGS=--quick   (two short steps: a ~2 minute smoke run)

1. Setup (in this process, Django): a user holding the curator and auditor roles, and a small
   public corpus (HotpotQA passages from the demo data) ingested through the running worker.
2. Warm-up: retrieval-only asks for every web process, one full ask for the worker.
3. Steps of offered rate (Poisson arrivals, open loop: a request is sent at its time whether or
   not earlier ones have come back), each ``--step-seconds`` long, with this mix:

   ``page``           GET /?q=... (the search page)
   ``ask_retrieval``  POST /api/ask, generation off (evidence only)
   ``ask_full``       POST /api/ask, generation on (waits for the whole answer)
   ``upload``         a small text file through Curation → Documents upload (login + CSRF)
   ``audit``          GET /audit/log/ and /audit/answers/

   Latency counts from the scheduled time, so a client that falls behind shows it. Every
   request ends as answered, shed (503 with Retry-After), failed, timeout or lost
   (benchmarks/load_stats.py); the report checks that they add up to the requests scheduled.
4. Celery queue depths (gpu, ingest) sampled from Redis every second; after the last step the
   answers recorded during the run are counted by state once the worker has caught up (none may
   stay ``retrieved``/``generating``).

The sustainable rate is the highest step with every request answered and each kind's p95
within ``P95_BOUND_MS``. Writes benchmarks/results/load_mix.json and load_mix.md (a quick run:
under RAGKG_STATE_DIR) and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

import redis
import requests
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.utils import timezone

from apps.accounts.roles import AUDITOR, CURATOR
from apps.accounts.services import collection_ensure
from apps.answers.models import Answer
from apps.core.admission import queue_depth
from apps.graph.driver import get_driver
from apps.graph.schema import graph_schema_apply
from apps.ingest.corpora import hotpotqa_passages
from apps.ingest.jobs import job_create, job_wait
from apps.ingest.models import IngestJob
from benchmarks.load_stats import (
    ANSWERED,
    OUTCOMES,
    Result,
    accounting,
    arrivals,
    classify,
    pick,
    shed_not_timeouts,
    step_summary,
    sustainable_rate,
)

COLLECTION = "bench-load"
UPLOAD_COLLECTION = "bench-load-uploads"
USERNAME, PASSWORD = "bench-load", "bench-load-password-5521"
WEIGHTS = {"page": 0.30, "ask_retrieval": 0.30, "ask_full": 0.15, "upload": 0.10, "audit": 0.15}
# What "answered in good time" means per kind (p95, ms) on this small machine.
P95_BOUND_MS = {"page": 1000.0, "audit": 1000.0, "ask_retrieval": 3000.0, "upload": 3000.0, "ask_full": 60000.0}
FULL_RATES, QUICK_RATES = (0.5, 1.0, 2.0, 4.0, 8.0), (1.0, 6.0)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def load_averages() -> dict[str, Any]:
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    return {"uptime": uptime, "loadavg_1_5_15": list(os.getloadavg()), "cpus": os.cpu_count()}


# --- setup ------------------------------------------------------------------------------------


def user_ensure() -> User:
    user, _ = User.objects.get_or_create(username=USERNAME)
    user.set_password(PASSWORD)
    user.is_active = True
    user.save()
    user.groups.set([Group.objects.get_or_create(name=role)[0] for role in (CURATOR, AUDITOR)])
    return user


def corpus_ensure(data_dir: Path, passages: int) -> dict[str, Any]:
    """The first ``passages`` HotpotQA passages into a public collection, through the worker (the
    graph's schema applied first: the stack is fresh)."""
    graph_schema_apply(driver=get_driver())
    files = [item for _, item in zip(range(passages), hotpotqa_passages(data_dir), strict=False)]
    collection_ensure(name=COLLECTION, public=True)
    started = time.perf_counter()
    job = job_create(collection=COLLECTION, uploads=files, public=True)
    job = job_wait(job_id=str(job.id), timeout=1800)
    seconds = round(time.perf_counter() - started, 1)
    log(f"corpus: {len(files)} passages, job {job.state} in {seconds} s")
    if job.state != IngestJob.DONE:
        raise SystemExit(f"the corpus did not load: {job.error}")
    return {"passages": len(files), "seconds": seconds, "counts": job.counts}


def questions_from(data_dir: Path, passages: int) -> list[str]:
    """A question about each passage of the corpus (its title line)."""
    items = [data for _, (_name, data) in zip(range(passages), hotpotqa_passages(data_dir), strict=False)]
    return [f"What is known about {data.decode().partition(chr(10))[0].strip()}?" for data in items]


# --- the client -------------------------------------------------------------------------------


class Client:
    """Logged-in HTTP sessions (one per thread, sharing the login's cookies) and the requests of the mix."""

    def __init__(self, base: str, *, timeout: float, questions: Sequence[str]) -> None:
        self.base = base
        self.timeout = timeout
        self.questions = list(questions)
        self._local = threading.local()
        self._count = 0
        self._lock = threading.Lock()
        self.login = requests.Session()
        page = self.login.get(f"{base}/accounts/login/", timeout=30)
        token = _token(page.text)
        reply = self.login.post(
            f"{base}/accounts/login/",
            data={"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": token},
            headers={"Referer": f"{base}/accounts/login/"},
            allow_redirects=False,
            timeout=30,
        )
        if reply.status_code != 302:
            raise SystemExit(f"could not log in as {USERNAME}: HTTP {reply.status_code}")
        self.csrf = _token(self.login.get(f"{base}/curation/documents/", timeout=30).text)

    def session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            session.cookies.update(self.login.cookies)
            # A new connection per request: reusing one the server is closing (its keep-alive
            # ended) would read as a lost request that the server never saw.
            session.headers["Connection"] = "close"
            self._local.session = session
        return session

    def _next(self) -> int:
        with self._lock:
            self._count += 1
            return self._count

    def question(self) -> str:
        return self.questions[self._next() % len(self.questions)]

    def send(self, kind: str) -> tuple[requests.Response, bool, str, dict[str, Any]]:
        """(response, whether its body is the expected one, what is wrong otherwise, extras)."""
        session, base, timeout = self.session(), self.base, self.timeout
        if kind == "page":
            response = session.get(f"{base}/", params={"q": self.question()}, timeout=timeout)
            return response, response.status_code == 200, "", {}
        if kind == "audit":
            path = "/audit/log/" if self._next() % 2 else "/audit/answers/"
            response = session.get(base + path, timeout=timeout)
            return response, response.status_code == 200, "", {"path": path}
        if kind in ("ask_retrieval", "ask_full"):
            generate = kind == "ask_full"
            body: dict[str, Any] = {
                "question": self.question(), "generate": generate, "stream": False, "collections": [COLLECTION],
            }  # fmt: skip
            response = session.post(f"{base}/api/ask", json=body, timeout=timeout)
            if response.status_code != 200:
                return response, False, "", {}
            data = response.json()
            state = str(data.get("state", ""))
            extra = {
                "state": state,
                "queue_ms": (data.get("timings_ms") or {}).get("queue"),
                "cached": bool(data.get("cached_from")),
            }
            return response, state == "done", f"answer {state}: {str(data.get('error', ''))[:80]}", extra
        if kind == "upload":
            number = self._next()
            text = f"Load test note {number}. Ada Lovelace wrote about the Analytical Engine in London.\n"
            response = session.post(
                f"{base}/curation/documents/upload/",
                data={"collection": UPLOAD_COLLECTION, "csrfmiddlewaretoken": self.csrf},
                files=[("files", (f"note-{number}.txt", text.encode(), "text/plain"))],
                headers={"Referer": f"{base}/curation/documents/"},
                allow_redirects=False,
                timeout=timeout,
            )
            ok = response.status_code == 302 and "/curation/jobs/" in response.headers.get("Location", "")
            return response, ok, "", {}
        raise ValueError(f"unknown kind {kind!r}")


def _token(html: str) -> str:
    marker = 'name="csrfmiddlewaretoken" value="'
    start = html.find(marker)
    if start < 0:
        raise SystemExit("no CSRF token on the page")
    start += len(marker)
    return html[start : html.index('"', start)]


def one(client: Client, result: Result, began: float) -> Result:
    """Send one request and fill in its outcome; never raises (an unexpected client error is ``lost``)."""
    result.started_at = round(time.perf_counter() - began, 3)
    try:
        response, ok, wrong, extra = client.send(result.kind)
        result.status = response.status_code
        result.retry_after = response.headers.get("Retry-After", "")
        result.extra = extra
        result.outcome, result.detail = classify(
            status=response.status_code, retry_after=result.retry_after, ok=ok, error=wrong
        )
    except requests.exceptions.Timeout as exc:
        result.outcome, result.detail = classify(status=None, timed_out=True, error=f"timeout: {type(exc).__name__}")
    except Exception as exc:  # a refused or reset connection, a body that is not JSON: counted, never dropped
        result.outcome, result.detail = classify(status=None, error=f"{type(exc).__name__}: {str(exc)[:80]}")
    result.seconds = round(time.perf_counter() - began - result.scheduled_at, 3)
    return result


class QueueSampler(threading.Thread):
    """Celery queue depths every ``interval`` seconds: (seconds since began, {queue: depth})."""

    def __init__(self, began: float, queues: Sequence[str], interval: float = 1.0) -> None:
        super().__init__(name="queue-sampler", daemon=True)
        self.began, self.queues, self.interval = began, list(queues), interval
        self.samples: list[tuple[float, dict[str, int]]] = []
        self.errors = 0
        self._stop_event = threading.Event()
        self._client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2, socket_connect_timeout=2)

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                depths = {queue: queue_depth(self._client, queue) for queue in self.queues}
                self.samples.append((round(time.perf_counter() - self.began, 1), depths))
            except redis.RedisError:
                self.errors += 1
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)

    def between(self, start: float, end: float) -> dict[str, dict[str, float]]:
        inside = [depths for at, depths in self.samples if start <= at < end]
        return {
            queue: {
                "max": max((d[queue] for d in inside), default=0),
                "mean": round(sum(d[queue] for d in inside) / len(inside), 1) if inside else 0.0,
            }
            for queue in self.queues
        }


def run_steps(
    client: Client,
    *,
    rates: Sequence[float],
    step_seconds: float,
    max_requests: int,
    seed: int,
    workers: int,
    sampler_queues: Sequence[str],
) -> dict[str, Any]:
    rng = random.Random(seed)
    began = time.perf_counter()
    sampler = QueueSampler(began, sampler_queues)
    sampler.start()
    futures: list[tuple[int, Future[Result]]] = []
    windows: list[tuple[float, float]] = []
    budget = max_requests
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="load") as pool:
        for number, rate in enumerate(rates):
            start = time.perf_counter() - began
            times = arrivals(rate, step_seconds, rng, limit=budget)
            budget -= len(times)
            log(f"step {number}: {rate:g} req/s for {step_seconds:g} s ({len(times)} requests)")
            for offset in times:
                at = start + offset
                delay = at - (time.perf_counter() - began)
                if delay > 0:
                    time.sleep(delay)
                result = Result(kind=pick(WEIGHTS, rng), step=number, scheduled_at=round(at, 3))
                futures.append((number, pool.submit(one, client, result, began)))
            end = start + step_seconds
            rest = end - (time.perf_counter() - began)
            if rest > 0:
                time.sleep(rest)
            windows.append((start, end))
        log(f"all {len(futures)} requests sent; waiting for the last replies")
    # The pool has waited for every request (each bounded by the client timeout).
    drained = round(time.perf_counter() - began - windows[-1][1], 1) if windows else 0.0
    sampler_tail = time.perf_counter() - began
    sampler.stop()
    results: list[Result] = []
    for _number, future in futures:
        results.append(future.result())
    steps = []
    for number, rate in enumerate(rates):
        mine = [r for r in results if r.step == number]
        summary = step_summary(mine, rate=rate, seconds=step_seconds, bounds_ms=P95_BOUND_MS)
        start, end = windows[number]
        summary["queue_depth"] = sampler.between(start, end)
        steps.append(summary)
    return {
        "steps": steps,
        "results": results,
        "scheduled": len(futures),
        "drain_seconds": drained,
        "queue_samples": sampler.samples,
        "queue_sample_errors": sampler.errors,
        "queue_depth_after_steps": sampler.between(windows[-1][1] if windows else 0.0, sampler_tail + 1),
    }


def warm(client: Client, processes: int, generators: int, *, timeout: float = 300.0, rounds: int = 6) -> list[str]:
    """Load the models in every web process and the generator in every worker process: rounds of
    ``processes`` retrieval-only asks at once until a whole round answers within 10 s, then
    ``generators`` full asks at once, one per worker process (a generous timeout: the first request
    of a process loads its models)."""
    began = time.perf_counter()
    kept, client.timeout = client.timeout, timeout
    seen: list[str] = []
    try:
        with ThreadPoolExecutor(max_workers=processes) as pool:
            for _ in range(rounds):
                batch = [
                    Result(kind="ask_retrieval", step=-1, scheduled_at=round(time.perf_counter() - began, 3))
                    for _ in range(processes)
                ]
                done = list(pool.map(lambda r: one(client, r, began), batch))
                seen += [f"{r.kind}:{r.outcome}:{r.seconds:.1f}s" for r in done]
                if all(r.outcome == ANSWERED and r.seconds < 10 for r in done):
                    break
        with ThreadPoolExecutor(max_workers=generators) as pool:
            batch = [
                Result(kind="ask_full", step=-1, scheduled_at=round(time.perf_counter() - began, 3))
                for _ in range(generators)
            ]
            for full in pool.map(lambda r: one(client, r, began), batch):
                seen.append(f"ask_full:{full.outcome}:{full.seconds:.1f}s{':' + full.detail if full.detail else ''}")
    finally:
        client.timeout = kept
    return seen


def answers_settle(since: Any, wait: float) -> dict[str, Any]:
    """Answers recorded during the run, by state, once none is waiting for generation (or ``wait`` s)."""
    pending_states = [Answer.RETRIEVED, Answer.GENERATING]
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if not Answer.objects.filter(created_at__gte=since, state__in=pending_states).exists():
            break
        time.sleep(2)
    rows = Answer.objects.filter(created_at__gte=since)
    by_state: dict[str, int] = {}
    for state in rows.values_list("state", flat=True):
        by_state[state] = by_state.get(state, 0) + 1
    return {"by_state": by_state, "pending_after_wait": rows.filter(state__in=pending_states).count()}


# --- report ----------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# Load mix ({report['run']}), {report['machine']}; answer cache on: {report.get('answer_cache_enabled')}",
        "",
        f"Sustainable rate: **{report['sustainable_per_s']} req/s** "
        f"(every request answered, p95 within {json.dumps(report['p95_bound_ms'])} ms). "
        f"Above it, shed (503) instead of timeouts: {report['shed_not_timeouts']}. "
        f"Load averages: start {report['load_start']['loadavg_1_5_15']}, end {report['load_end']['loadavg_1_5_15']}.",
        "",
        "| offered/s | kind | sent | answered/s | p50 ms | p95 ms | p99 ms | shed | failed | timeout | lost "
        "| gpu q max | ingest q max |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for step in report["steps"]:
        queue = step["queue_depth"]
        for kind, s in [*step["kinds"].items(), ("all", step["overall"])]:
            lat = s["latency_ms"]
            lines.append(
                f"| {step['offered_per_s']:g} | {kind} | {s['sent']} | {s['throughput_per_s']:.2f} | {_ms(lat['p50'])} "
                f"| {_ms(lat['p95'])} | {_ms(lat['p99'])} | {s['shed']} | {s['failed']} | {s['timeout']} | {s['lost']} "
                f"| {queue.get('gpu', {}).get('max', '-')} | {queue.get('ingest', {}).get('max', '-')} |"
            )
    lines += ["", "Answer cache (`ANSWER_CACHE`): answered asks served from it, and latency of hits / misses:", ""]
    lines += [
        "| offered/s | kind | answered | hits | hit rate | hit p50/p95 ms | miss p50/p95 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for step in report["steps"]:
        for kind, c in step.get("answer_cache", {}).items():
            lines.append(
                f"| {step['offered_per_s']:g} | {kind} | {c['answered']} | {c['hits']} | {c['hit_rate']} "
                f"| {_ms(c['hit_ms']['p50'])} / {_ms(c['hit_ms']['p95'])} "
                f"| {_ms(c['miss_ms']['p50'])} / {_ms(c['miss_ms']['p95'])} |"
            )
    acc = report["accounting"]
    lines += [
        "",
        f"Accounting: {acc['scheduled']} scheduled, "
        + ", ".join(f"{o} {acc[o]}" for o in OUTCOMES)
        + f"; complete: {acc['complete']}. Answers recorded during the run: {report['answers']['by_state']}, "
        f"left pending: {report['answers']['pending_after_wait']}.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run: two 15 s steps (1 and 6 req/s)")
    parser.add_argument("--rates", default=None, help="comma-separated offered rates (req/s)")
    parser.add_argument("--step-seconds", type=float, default=None)
    parser.add_argument("--timeout", type=float, default=60.0, help="client timeout per request (s)")
    parser.add_argument("--max-requests", type=int, default=2000, help="at most this many requests in all")
    parser.add_argument("--passages", type=int, default=None, help="corpus size (HotpotQA passages)")
    parser.add_argument("--workers", type=int, default=128, help="client threads (open loop: keep it large)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-setup", action="store_true", help="the user and corpus are there already")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")] if args.rates else list(QUICK_RATES if args.quick else FULL_RATES)
    step_seconds = args.step_seconds or (15.0 if args.quick else 30.0)
    passages = args.passages or (12 if args.quick else 24)
    default_out = Path(settings.STATE_DIR) / "load_mix_quick.json"  # a smoke run keeps the results file
    out = Path(args.out or (default_out if args.quick else BASE_DIR / "benchmarks/results/load_mix.json"))
    base = f"http://{settings.WEB_HOST}:{settings.WEB_PORT}"
    if settings.WEB_HOST not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit(f"load_mix only runs against 127.0.0.1, not {settings.WEB_HOST}")
    data_dir = Path(settings.DEMO_DATA_DIR)
    load_start = load_averages()
    log(f"load at start: {load_start['uptime']}")
    began = time.perf_counter()
    corpus = None
    if not args.skip_setup:
        collection_ensure(name=UPLOAD_COLLECTION, owner=user_ensure(), public=False)
        corpus = corpus_ensure(data_dir, passages)
    client = Client(base, timeout=args.timeout, questions=questions_from(data_dir, passages))
    warm_started = time.perf_counter()
    warm_up = warm(client, settings.WEB_WORKERS, settings.GENERATION_CONCURRENCY)
    log(f"warm-up in {time.perf_counter() - warm_started:.0f} s: {warm_up}")
    since = timezone.now()
    run = run_steps(
        client,
        rates=rates,
        step_seconds=step_seconds,
        max_requests=args.max_requests,
        seed=args.seed,
        workers=args.workers,
        sampler_queues=[settings.ANSWER_GENERATION_QUEUE, "ingest"],
    )
    answers = answers_settle(since, wait=settings.ANSWER_QUEUE_TIMEOUT + settings.ANSWER_GENERATION_TIMEOUT + 30)
    load_end = load_averages()
    log(f"load at end: {load_end['uptime']}")
    results: list[Result] = run.pop("results")
    sustainable = sustainable_rate(run["steps"])
    report = {
        "benchmark": "load_mix",
        "run": "quick" if args.quick else "full",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "note": "the machine's cores are shared with other work; see the load averages",
        "load_start": load_start,
        "load_end": load_end,
        "seconds": round(time.perf_counter() - began, 1),
        "weights": WEIGHTS,
        "p95_bound_ms": P95_BOUND_MS,
        "rates": rates,
        "step_seconds": step_seconds,
        "client_timeout_s": args.timeout,
        "stack": {
            "web_workers": settings.WEB_WORKERS,
            "web_threads": settings.WEB_THREADS,
            "max_inflight_per_process": settings.MAX_INFLIGHT,
            "max_gpu_queue": settings.MAX_GPU_QUEUE,
            "generation_slots": settings.GENERATION_SLOTS,
            "max_ingest_queue": settings.MAX_INGEST_QUEUE,
            "celery_concurrency": settings.CELERY_WORKER_CONCURRENCY,
            "generation_concurrency": settings.GENERATION_CONCURRENCY,
            "answer_max_new_tokens": settings.ANSWER_MAX_NEW_TOKENS,
            "answer_queue_timeout_s": settings.ANSWER_QUEUE_TIMEOUT,
        },
        "corpus": corpus,
        "warm_up": warm_up,
        "sustainable_per_s": sustainable,
        "answer_cache_enabled": settings.ANSWER_CACHE,
        "shed_not_timeouts": shed_not_timeouts(run["steps"], sustainable),
        "accounting": accounting(run["scheduled"], results),
        "answers": answers,
        **run,
        "requests": [
            {
                "kind": r.kind,
                "step": r.step,
                "at": r.scheduled_at,
                "lag": round(r.started_at - r.scheduled_at, 3),
                "s": r.seconds,
                "outcome": r.outcome,
                "status": r.status,
                **({"detail": r.detail} if r.detail else {}),
            }
            for r in results
        ],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    table = markdown(report)
    out.with_suffix(".md").write_text(table)
    print("\n" + table)
    print(f"written to {out} and {out.with_suffix('.md')} ({report['seconds']:.0f} s in all)")
    complete = report["accounting"]["complete"] and answers["pending_after_wait"] == 0
    return 0 if complete and any(r.outcome == ANSWERED for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
