"""Is the first question after a start as fast as the rest? Warm-up on and off, side by side.

    make bench-warm                      (a private stack under var/bench-warm, wiped first)

1. Setup: Neo4j, Redis and the Celery worker of a private stack; a small public corpus (HotpotQA
   passages from the demo data) ingested through the worker.
2. Web: for each arrival delay (the first user comes as soon as the server answers, or some seconds
   later) and each setting of ``RAGKG_WARM_UP`` (on, off, interleaved): the web server is restarted
   with that setting, the delay waited, then ``--questions`` evidence-only asks (``POST /api/ask``,
   generation off) one after the other. Each web process warms itself, so with several processes
   the first question each of them handles is what warm-up is for: the report gives the slowest
   of the first ``WEB_WORKERS`` asks next to the median of the later ones.
3. Generation: the worker restarted with each setting, the delay waited, two full asks (generation
   on) one after the other: the first's generation time next to the second's.

Writes benchmarks/results/warm_start.json and prints a table; the load average is in the report.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
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

import requests
from django.conf import settings

from benchmarks.load_mix import corpus_ensure, load_averages, log, questions_from

PASSAGES = 60
SETTINGS = ("1", "0")  # RAGKG_WARM_UP: on, off
SETTLE_S = 15.0  # idle before each restart, so that one run's tail does not load the next


def services(action: str, names: Sequence[str], env: dict[str, str] | None = None) -> None:
    subprocess.run(
        [sys.executable, str(BASE_DIR / "scripts/services.py"), action, *names],
        cwd=BASE_DIR,
        env={**os.environ, **(env or {})},
        check=True,
        capture_output=True,
    )


def restart(name: str, warm: str) -> float:
    """Stop ``name`` and start it with ``RAGKG_WARM_UP=warm``; the seconds until it answered."""
    services("down", [name])
    time.sleep(SETTLE_S)
    started = time.perf_counter()
    services("up", [name], {"RAGKG_WARM_UP": warm})
    return round(time.perf_counter() - started, 1)


def ask(url: str, question: str, *, generate: bool, timeout: float) -> dict[str, Any]:
    """One ask; its wall time and the server's timings."""
    started = time.perf_counter()
    response = requests.post(url, json={"question": question, "generate": generate, "stream": False}, timeout=timeout)
    seconds = time.perf_counter() - started
    body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
    generation = body.get("generation") or {}
    return {
        "status": response.status_code,
        "ms": round(seconds * 1000),
        "server_ms": body.get("timings_ms") or {},
        "first_token_ms": generation.get("first_token_ms"),
    }


def web_run(url: str, questions: Sequence[str], *, warm: str, delay: float, timeout: float) -> dict[str, Any]:
    up = restart("web", warm)
    time.sleep(delay)
    replies = [ask(url, question, generate=False, timeout=timeout) for question in questions]
    ms = [reply["ms"] for reply in replies]
    first = ms[: settings.WEB_WORKERS]
    rest = ms[settings.WEB_WORKERS :]
    return {
        "warm_up": warm == "1",
        "arrival_delay_s": delay,
        "web_up_s": up,
        "statuses": sorted({reply["status"] for reply in replies}),
        "ms": ms,
        "first_per_process_max_ms": max(first),
        "later_median_ms": statistics.median(rest) if rest else None,
        "load_average": list(os.getloadavg()),
    }


def generation_run(url: str, questions: Sequence[str], *, warm: str, delay: float, timeout: float) -> dict[str, Any]:
    up = restart("celery", warm)
    time.sleep(delay)
    replies = [ask(url, question, generate=True, timeout=timeout) for question in questions[:2]]
    return {
        "warm_up": warm == "1",
        "arrival_delay_s": delay,
        "worker_up_s": up,
        "statuses": [reply["status"] for reply in replies],
        "ms": [reply["ms"] for reply in replies],
        "first_token_ms": [reply["first_token_ms"] for reply in replies],
        "load_average": list(os.getloadavg()),
    }


def table_print(report: dict[str, Any]) -> None:
    print(f"\n{'part':<11} {'warm-up':<8} {'delay s':>7} {'first ms':>9} {'later ms':>9}  all ms (first token ms)")
    for row in report["web"]:
        print(
            f"{'web':<11} {'on' if row['warm_up'] else 'off':<8} {row['arrival_delay_s']:>7.0f} "
            f"{row['first_per_process_max_ms']:>9} {row['later_median_ms']:>9}  {row['ms']}"
        )
    for row in report["generation"]:
        print(
            f"{'generation':<11} {'on' if row['warm_up'] else 'off':<8} {row['arrival_delay_s']:>7.0f} "
            f"{row['ms'][0]:>9} {row['ms'][-1]:>9}  {row['ms']} ({row['first_token_ms']})"
        )
    print(f"load average at the end: {report['load_end']['loadavg_1_5_15']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=2, help="runs per setting; the order alternates")
    parser.add_argument("--settle", type=float, default=60.0, help="idle seconds after the corpus is in")
    parser.add_argument("--delays", type=float, nargs="+", default=[0.0, 30.0])
    parser.add_argument("--generation-delay", type=float, default=30.0)
    parser.add_argument("--skip-generation", action="store_true")
    parser.add_argument("--skip-web", action="store_true")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--out", default=str(BASE_DIR / "benchmarks/results/warm_start.json"))
    args = parser.parse_args()
    data_dir = Path(settings.DEMO_DATA_DIR)
    began = time.perf_counter()
    load_start = load_averages()
    corpus = corpus_ensure(data_dir, PASSAGES)
    questions = questions_from(data_dir, PASSAGES)
    time.sleep(args.settle)  # the worker's post-ingestion work ends before anything is timed
    url = f"http://{settings.WEB_HOST}:{settings.WEB_PORT}/api/ask"
    web: list[dict[str, Any]] = []
    orders = [SETTINGS if repeat % 2 == 0 else SETTINGS[::-1] for repeat in range(args.repeats)]
    for delay in [] if args.skip_web else args.delays:
        for warm in (warm for order in orders for warm in order):
            picked = questions[len(web) * args.questions :][: args.questions]  # fresh questions each run
            row = web_run(url, picked, warm=warm, delay=delay, timeout=args.timeout)
            log(f"web, warm-up {warm}, delay {delay:.0f} s: {row['ms']}")
            web.append(row)
    generation: list[dict[str, Any]] = []
    if not args.skip_generation:
        for warm in (warm for order in orders for warm in order):
            picked = questions[-2 * (len(generation) + 1) :]
            row = generation_run(url, picked, warm=warm, delay=args.generation_delay, timeout=args.timeout)
            log(f"generation, warm-up {warm}: {row['ms']}")
            generation.append(row)
    report = {
        "benchmark": "warm_start",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "seconds": round(time.perf_counter() - began, 1),
        "stack": {"web_workers": settings.WEB_WORKERS, "web_threads": settings.WEB_THREADS},
        "corpus": corpus,
        "web": web,
        "generation": generation,
        "load_start": load_start,
        "load_end": load_averages(),
        "notes": (
            "web: first_per_process_max_ms is the slowest of the first WEB_WORKERS asks (each web process's "
            "first question), later_median_ms the median of the rest; generation: ms of two full asks in a row"
        ),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    table_print(report)
    print(f"\nwritten to {out} ({report['seconds']:.0f} s in all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
