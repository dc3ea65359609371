"""Cost as the corpus grows: ingestion and the question path at 10k, 100k and 1M chunks.

    make bench-scale                                   (a private stack under var/bench-scale, wiped first)
    make bench-scale BENCH_ARGS="--sizes 10000,100000"  (fewer sizes)

One graph grows step by step. First the MuSiQue and HotpotQA passages are ingested with the real
pipeline (the base); then, for each size, filler shaped like ingested data (benchmarks/answer_corpus.py:
copied texts, Zipf-skewed mentions, RELATED evidence, noisy copies of the base vectors in the HNSW text
index) brings the graph to that many chunks, and this is measured:

- the question path: the 200 multi-hop questions through stages 1-6 (``apps.answers.pipeline.retrieve``,
  graph mode, every collection) after 100 warm-up questions, p50/p95 of each stage and in all;
- ingestion: fresh 2WikiMultihopQA passages (different ones at each size) through the real pipeline
  (parse, spaCy NER helpers, the text encoder, the Neo4j write, the FAISS journal), passages per second;
- deletion: 50 of those passages deleted one at a time (``apps.ingest.services.document_delete``: the
  graph with exactly what only it supported, its vectors, its change-log entry), p50/p95 per document;
- memory and storage: the answering process's resident memory and its peak (a fresh process, like a web
  process after a restart: it loads the models and its copy of the text vectors, then answers 20
  questions), in all and per chunk, its vector copy by part (vectors, HNSW graph, id maps, sidecar);
  Neo4j's; the Neo4j store on disk, the relational database (the vectors' source of truth) and the
  local FAISS text snapshot on disk. This process's own memory is reported too (it also builds the
  filler: not what a user's process holds).

Writes benchmarks/results/scale.json and benchmarks/results/scale.png (latency against corpus size).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

from django.conf import settings

# The private stack runs with DEBUG on, which makes Django keep its last 9,000 SQL statements with their
# parameters: with vectors' bytes in them, gigabytes that no served process holds.
settings.DEBUG = False

from apps.answers.tools import default_tools, retrieval_params
from apps.graph.driver import get_driver
from apps.graph.schema import graph_schema_apply
from apps.ingest import corpora
from apps.ingest.services import FAILED, default_extractor, document_delete, extraction_helpers_stop, uploads_ingest
from apps.ingest.timing import StageTimer
from benchmarks.answer_corpus import (
    HOW,
    FillerParams,
    base_build,
    base_files,
    degree_shape,
    filler_grow,
    graph_counts,
    text_index_info,
)
from benchmarks.answer_latency import latency_measure, latency_report, questions_load, warmup_load

COLLECTION = "bench-scale"
SIZES = (10_000, 100_000, 1_000_000)
WARMUP_QUESTIONS = 100  # XQuAD questions first: Neo4j compiles its plans and its JIT warms up
TARGET_P50_MS = {100_000: 30.0, 1_000_000: 60.0}
DELETED = 50  # of the passages ingested at each size
PROBE_QUESTIONS = 20  # answered by the fresh process whose memory is measured


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def rss_mib(pid: int | str = "self") -> float | None:
    """Resident memory of a process (MiB), from /proc."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def peak_rss_mib() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def answering_probe(questions: list[str]) -> dict[str, Any]:
    """In this (fresh) process: load what answering needs, answer ``questions``; its memory."""
    from apps.vectors.registry import vector_registry

    tools, params = default_tools(), retrieval_params(mode="graph")
    latency_measure(questions, tools, params)
    copy = vector_registry().get("text")
    return {
        "rss": rss_mib(),
        "peak_rss": peak_rss_mib(),
        "text_vectors": copy.count,
        "text_copy_bytes": copy.memory(),
        "storage": copy.describe()["storage"],
    }


def answering_memory(size: int, questions: list[str]) -> dict[str, Any]:
    """The answering process's memory, measured in a fresh process (see answering_probe)."""
    done = subprocess.run(
        [sys.executable, __file__, "--answering-probe"],
        input=json.dumps(questions),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"the answering probe failed: {done.stderr.strip().splitlines()[-1:]}")
    probe: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    copy = probe["text_copy_bytes"]
    probe["bytes_per_chunk"] = round(probe["rss"] * 2**20 / size)
    probe["copy_bytes_per_vector"] = round(copy["total"] / max(probe["text_vectors"], 1))
    return probe


def neo4j_pid() -> int | None:
    try:
        return int((Path(settings.STATE_DIR) / "run" / "neo4j.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def disk_mib(path: Path) -> float:
    """Bytes on disk under ``path`` (MiB), as ``du`` counts them."""
    if not path.exists():
        return 0.0
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True).stdout
    return round(int(out.split()[0]) / 1024, 1)


def ingestion_measure(passages: list[tuple[str, bytes]]) -> tuple[dict[str, Any], list[str]]:
    """Ingestion's rate; and the ids of the documents it created."""
    timer = StageTimer()
    started = time.perf_counter()
    outcomes = uploads_ingest(
        driver=get_driver(),
        uploads=passages,
        collection=f"{COLLECTION}-ingest",
        extractor=default_extractor(),
        timer=timer,
    )
    seconds = time.perf_counter() - started
    created = [outcome.document_id for outcome in outcomes if outcome.status != FAILED and outcome.document_id]
    return {
        "passages": len(passages),
        "failures": sum(outcome.status == FAILED for outcome in outcomes),
        "seconds": round(seconds, 1),
        "passages_per_second": round(len(passages) / seconds, 1),
        "stage_seconds": {stage: round(value, 2) for stage, value in sorted(timer.seconds.items())},
    }, created


def deletion_measure(document_ids: list[str]) -> dict[str, Any]:
    """Delete these documents one at a time; milliseconds per document."""
    times = []
    for document_id in document_ids:
        started = time.perf_counter()
        document_delete(driver=get_driver(), document_id=document_id, actor="system:bench")
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    if not times:
        return {"documents": 0}
    return {
        "documents": len(times),
        "p50_ms": round(times[len(times) // 2], 1),
        "p95_ms": round(times[min(len(times) - 1, int(len(times) * 0.95))], 1),
        "max_ms": round(times[-1], 1),
    }


def size_measure(
    *, size: int, questions: list[str], warmup: list[str], passages: list[tuple[str, bytes]]
) -> dict[str, Any]:
    tools, params = default_tools(), retrieval_params(mode="graph")
    latency_measure(warmup, tools, params)
    load_before = os.getloadavg()
    latency = latency_report(latency_measure(questions, tools, params))
    latency.pop("per_question", None)
    log(f"{size:,} chunks: stages 1-6 {latency['stages_1_6_ms']}")
    ingestion, created = ingestion_measure(passages)  # the NER helpers stay up between sizes, as in a worker
    log(f"{size:,} chunks: ingestion {ingestion['passages_per_second']} passages/s")
    deletion = deletion_measure(created[:DELETED])
    log(f"{size:,} chunks: deletion {deletion}")
    answering = answering_memory(size, questions[:PROBE_QUESTIONS])
    log(f"{size:,} chunks: answering process {answering['rss']} MiB ({answering['bytes_per_chunk']:,} B/chunk)")
    state = Path(settings.STATE_DIR)
    pid = neo4j_pid()
    return {
        "chunks": size,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "latency": latency,
        "ingestion": ingestion,
        "deletion": deletion,
        "answering_process": answering,
        "memory_mib": {
            "answering_process_rss": answering["rss"],
            "answering_process_peak_rss": answering["peak_rss"],
            "this_process_rss": rss_mib(),
            "this_process_peak_rss": peak_rss_mib(),
            "neo4j_rss": rss_mib(pid) if pid else None,
        },
        "disk_mib": {
            "neo4j_store": disk_mib(state / "neo4j"),
            "relational_db": disk_mib(state / "db.sqlite3"),
            "faiss_text_index": disk_mib(state / "vectors" / "text"),
        },
        "graph": graph_counts(get_driver()),
        "entity_degrees": degree_shape(get_driver(), settings.ANSWER_MAX_DEGREE),
        "text_index": text_index_info(),
    }


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [row["chunks"] for row in rows]
    figure, axes = plt.subplots(figsize=(6, 3.6), dpi=110)
    for key, style in (("p50", "o-"), ("p95", "s--")):
        axes.plot(sizes, [row["latency"]["stages_1_6_ms"][key] for row in rows], style, label=f"stages 1-6 {key}")
    axes.plot(
        sizes,
        [row["latency"]["stages_ms"]["graph_expansion"]["p50"] for row in rows],
        "^:",
        label="graph expansion p50",
    )
    axes.set_xscale("log")
    axes.set_xlabel("chunks in the graph")
    axes.set_ylabel("ms per question")
    axes.set_ylim(bottom=0)
    axes.grid(True, alpha=0.3)
    axes.legend()
    axes.set_title("Question path before generation, 2-core CPU")
    figure.tight_layout()
    figure.savefig(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="chunk counts, ascending, comma-separated")
    parser.add_argument("--ingest-passages", type=int, default=300, help="2Wiki passages ingested at each size")
    parser.add_argument("--out", default=str(BASE_DIR / "benchmarks/results/scale.json"))
    parser.add_argument("--answering-probe", action="store_true", help=argparse.SUPPRESS)  # see answering_probe
    args = parser.parse_args()
    if args.answering_probe:
        print(json.dumps(answering_probe(json.loads(sys.stdin.read()))))
        return 0
    sizes = sorted(int(size) for size in args.sizes.split(","))
    out = Path(args.out)
    data_dir = Path(settings.DEMO_DATA_DIR)
    began = time.perf_counter()
    driver = get_driver()
    graph_schema_apply(driver=driver)
    base = base_build(
        driver=driver, files=base_files(data_dir, musique=None, hotpotqa=None), collection=COLLECTION, log=log
    )
    questions, warmup = questions_load(data_dir), warmup_load(data_dir, WARMUP_QUESTIONS)
    wiki = list(corpora.twowiki_passages(data_dir))
    rows: list[dict[str, Any]] = []
    chunks, documents = len(base.chunks), 0
    for step, size in enumerate(sizes):
        if size > chunks:
            params = FillerParams(
                target_chunks=size, collection=COLLECTION, seed=step, start_chunks=chunks, first_document=documents
            )
            filler = filler_grow(driver=driver, base=base, params=params, log=log)
            documents += filler["documents"]
        else:
            filler = None
        passages = wiki[step * args.ingest_passages : (step + 1) * args.ingest_passages]
        row = size_measure(size=size, questions=questions, warmup=warmup, passages=passages) | {"filler": filler}
        chunks = int(row["graph"]["nodes"].get("Chunk", size))
        rows.append(row)
        report = {
            "benchmark": "scale",
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
            "how": HOW,
            "neo4j": {"heap": settings.NEO4J_HEAP, "page_cache": settings.NEO4J_PAGE_CACHE},
            "base": base.report,
            "targets_p50_ms": TARGET_P50_MS,
            "sizes": rows,
            "seconds": round(time.perf_counter() - began, 1),
        }
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")  # after every size: a long run keeps what it measured
    extraction_helpers_stop()
    plot(rows, out.with_suffix(".png"))
    print(
        f"\n{'chunks':>10} {'p50 ms':>8} {'p95 ms':>8} {'expand p50':>11} {'ingest p/s':>11} {'RSS MiB':>8} "
        f"{'B/chunk':>8} {'Neo4j RSS':>10} {'store MiB':>10} {'FAISS MiB':>10}"
    )
    for row in rows:
        totals = row["latency"]["stages_1_6_ms"]
        print(
            f"{row['chunks']:>10,} {totals['p50']:>8.1f} {totals['p95']:>8.1f} "
            f"{row['latency']['stages_ms']['graph_expansion']['p50']:>11.1f} "
            f"{row['ingestion']['passages_per_second']:>11.1f} {row['memory_mib']['answering_process_rss']:>8} "
            f"{row['answering_process']['bytes_per_chunk']:>8,} "
            f"{row['memory_mib']['neo4j_rss']:>10} {row['disk_mib']['neo4j_store']:>10} "
            f"{row['disk_mib']['faiss_text_index']:>10}"
        )
    print(f"written to {out} and {out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
