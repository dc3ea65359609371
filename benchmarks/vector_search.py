"""Vector search: FAISS Flat, HNSW and IVF-PQ side by side with Neo4j's own vector index, same vectors.

    make bench-vectors                               (a private Neo4j under var/bench-vectors, port 37687)
    make bench-vectors BENCH_ARGS="--sizes 10000 --neo4j-sizes 10000"

For each size: clustered synthetic 384-d vectors (and, with --real, a file of real embeddings),
each index type built through apps.vectors.VectorIndex, then build time, index size, RSS growth,
queries per second at batch 1 and 64, and recall@10 against exact search; HNSW over several
efSearch values, IVF-PQ over several nprobe values, and a collection-filtered search. Neo4j
(`CREATE VECTOR INDEX`, `db.index.vector.queryNodes`) is measured on the same vectors and queries.
Writes benchmarks/results/vector_search.json and prints one line per measurement.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

import numpy as np
import numpy.typing as npt
from django.conf import settings
from neo4j import Driver

from apps.graph.driver import get_driver
from apps.vectors._faiss import faiss
from apps.vectors.index import VectorIndex
from apps.vectors.types import HnswParams, IvfPqParams, SpaceConfig, VectorItem
from benchmarks import cypher as bench_cypher

K = 10
WARM_UP = 20  # queries run before timing (plan caches, page faults)
COLLECTIONS = 10  # vectors are spread over this many collections; the filtered search asks for one
Matrix = npt.NDArray[np.float32]
Labels = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Dataset:
    name: str
    base: Matrix
    queries: Matrix
    truth: Labels  # exact top-K positions for each query
    truth_filtered: Labels  # exact top-K positions within collection c0


def rss() -> int:
    """This process's resident memory in bytes."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def log(row: dict[str, Any]) -> None:
    print(json.dumps(row), flush=True)


# --- data -------------------------------------------------------------------------------


def synthetic(n: int, dim: int, queries: int, seed: int = 0) -> tuple[Matrix, Matrix]:
    """Vectors shaped like sentence embeddings, not uniform noise.

    A point is a cluster centre (n / 100 of them, weight 0.45) plus a displacement in a 32-d subspace
    with power-law variances (exponent 0.5, in a random rotation) plus a little isotropic noise plus a
    direction shared by all, normalised; queries are fresh draws. The constants make 6,000 of them
    match 6,000 MiniLM embeddings of the demo corpus where it matters for nearest-neighbour search:
    local intrinsic dimension 30 (MiniLM 25), HNSW recall@10 0.88/0.96/0.99 at efSearch 16/32/64
    (MiniLM 0.91/0.97/0.99), mean similarity of random pairs 0.07 (0.09), of nearest neighbours
    0.57 (0.52). See docs/vectors.md.
    """
    rng = np.random.default_rng(seed)
    scale = np.zeros(dim, dtype=np.float32)
    scale[:32] = np.arange(1, 33) ** -0.25
    rotation = np.linalg.qr(rng.standard_normal((dim, dim)))[0].astype(np.float32)
    mean = rng.standard_normal(dim).astype(np.float32)
    mean *= 0.3 / np.linalg.norm(mean)
    spread = (np.arange(1, dim + 1) ** -0.4).astype(np.float32)
    centres = (rng.standard_normal((max(16, n // 100), dim)).astype(np.float32) * spread) @ rotation
    centres *= 0.45 / np.linalg.norm(centres, axis=1, keepdims=True)

    def draw(count: int) -> Matrix:
        out = np.empty((count, dim), dtype=np.float32)
        for start in range(0, count, 100_000):
            m = min(100_000, count - start)
            block = (rng.standard_normal((m, dim)).astype(np.float32) * scale) @ rotation / np.linalg.norm(scale)
            block += rng.standard_normal((m, dim)).astype(np.float32) * 0.02
            block += centres[rng.integers(0, len(centres), m)] + mean
            out[start : start + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
        return out

    return draw(n), draw(queries)


def exact_truth(base: Matrix, queries: Matrix, positions: Labels | None = None) -> Labels:
    index = faiss.IndexFlatIP(base.shape[1])
    index.add(base if positions is None else base[positions])
    found: Labels = index.search(queries, K)[1]
    return found if positions is None else positions[found]


def dataset(name: str, base: Matrix, queries: Matrix) -> Dataset:
    started = time.perf_counter()
    in_c0 = np.arange(0, len(base), COLLECTIONS, dtype=np.int64)
    data = Dataset(name, base, queries, exact_truth(base, queries), exact_truth(base, queries, in_c0))
    log({"dataset": name, "vectors": len(base), "queries": len(queries), "truth_seconds": _since(started)})
    return data


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 3)


def recall(found: Labels, truth: Labels) -> float:
    hits = sum(len(set(row[row >= 0].tolist()) & set(t.tolist())) for row, t in zip(found, truth, strict=True))
    return round(hits / truth.size, 4)


# --- FAISS through VectorIndex ------------------------------------------------------------


def items_for(n: int) -> list[VectorItem]:
    """Row i as a node whose 32-hex id starts with 2i, so that its vector id (first 63 bits) is i."""
    return [VectorItem(f"{2 * i:016x}{0:016x}", "Chunk", f"c{i % COLLECTIONS}") for i in range(n)]


def build(config: SpaceConfig, base: Matrix) -> tuple[VectorIndex, dict[str, Any]]:
    gc.collect()
    before = rss()
    index = VectorIndex(config)
    items = items_for(len(base))
    started = time.perf_counter()
    for start in range(0, len(base), 20_000):
        index.add(items[start : start + 20_000], base[start : start + 20_000])
    seconds = _since(started)
    size = index.size_bytes()
    return index, {
        "build_seconds": seconds,
        "index_mib": round(size / 2**20, 1),
        "memory_bytes_per_vector": {part: round(value / len(base)) for part, value in index.memory().items()},
        "rss_delta_mib": round((rss() - before) / 2**20, 1),
    }


def positions(hits: list[list[Any]]) -> Labels:
    """Hits back to row numbers (a vector id is its row number, see items_for)."""
    out = np.full((len(hits), K), -1, dtype=np.int64)
    for row, found in enumerate(hits):
        out[row, : len(found)] = [hit.id for hit in found]
    return out


def timed_queries(
    search: Callable[[Any], list[list[Any]]], queries: Any, batch: int, budget: float
) -> tuple[float, list[list[Any]]]:
    """Queries per second over as many batches as fit in ``budget`` seconds (at least one pass of 50)."""
    found: list[list[Any]] = []
    started = time.perf_counter()
    done = 0
    while done < len(queries):
        found += search(queries[done : done + batch])
        done += batch
        if time.perf_counter() - started > budget and done >= 50:
            break
    return round(done / (time.perf_counter() - started), 1), found


def concurrent_qps(search: Callable[[Any], list[list[Any]]], queries: Any, budget: float, threads: int) -> float:
    """Single queries from ``threads`` client threads at once (a web server's request threads)."""
    done = [0] * threads
    started = time.perf_counter()

    def client(slot: int) -> None:
        for i in range(slot, len(queries), threads):
            search(queries[i : i + 1])
            done[slot] += 1
            if time.perf_counter() - started > budget:
                return

    workers = [threading.Thread(target=client, args=(slot,)) for slot in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return round(sum(done) / (time.perf_counter() - started), 1)


def measure(index: VectorIndex, data: Dataset, budget: float, collections: set[str] | None = None) -> dict[str, Any]:
    truth = data.truth if collections is None else data.truth_filtered

    def search(queries: Matrix) -> list[list[Any]]:
        return index.search(queries, K, collections=collections)

    search(data.queries[:WARM_UP])
    qps_1, found = timed_queries(search, data.queries, 1, budget)
    qps_64, _ = timed_queries(search, data.queries, 64, budget)
    return {
        "qps_batch1": qps_1,
        "qps_batch1_2_clients": concurrent_qps(search, data.queries, budget, 2),
        "qps_batch64": qps_64,
        "recall_at_10": recall(positions(found), truth[: len(found)]),
    }


def faiss_runs(data: Dataset, args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    n, dim = data.base.shape
    hnsw = HnswParams(m=args.hnsw_m, ef_construction=args.hnsw_ef_construction, ef_search=args.hnsw_ef_search[0])
    nlist = args.ivf_nlist or (256 if n < 50_000 else 1024)
    ivfpq = IvfPqParams(nlist=nlist, m=args.ivf_m, nbits=8, nprobe=args.ivf_nprobe[0])
    base = SpaceConfig(space="text", dim=dim, model="bench", hnsw=hnsw, ivfpq=ivfpq, filter_exact_max=0)
    for index_type in args.types:
        if index_type == "hnsw" and n > args.hnsw_max:
            continue
        for storage in args.hnsw_storage if index_type == "hnsw" else [None]:
            config = replace(base, index_type=index_type)
            if storage is not None:
                config = replace(config, hnsw=replace(config.hnsw, storage=storage))
            index, built = build(config, data.base)
            kind = {"index": index_type, **({"storage": storage} if storage else {})}
            for variant, tuned in _variants(config, index_type, args):
                index.config = tuned
                row = {"dataset": data.name, "engine": "faiss", **kind, **variant, **built}
                row.update(measure(index, data, args.budget))
                yield row
            index.config = config
            yield {"dataset": data.name, "engine": "faiss", **kind, "filter": "1 of 10 collections",
                   **measure(index, data, args.budget, collections={"c0"})}  # fmt: skip
            del index
            gc.collect()


def _variants(
    config: SpaceConfig, index_type: str, args: argparse.Namespace
) -> Iterator[tuple[dict[str, Any], SpaceConfig]]:
    if index_type == "hnsw":
        for ef in args.hnsw_ef_search:
            yield (
                {"M": config.hnsw.m, "efConstruction": config.hnsw.ef_construction, "efSearch": ef},
                replace(config, hnsw=replace(config.hnsw, ef_search=ef)),
            )
    elif index_type == "ivfpq":
        for nprobe in args.ivf_nprobe:
            params = replace(config.ivfpq, nprobe=nprobe)
            yield {"nlist": params.nlist, "pq_m": params.m, "nprobe": nprobe}, replace(config, ivfpq=params)
    else:
        yield {}, config


# --- Neo4j's vector index ------------------------------------------------------------------


def neo4j_clear(driver: Driver) -> None:
    driver.execute_query(bench_cypher.VECTOR_BENCH_INDEX_DROP, database_=settings.NEO4J_DATABASE)
    while True:
        records, _, _ = driver.execute_query(
            bench_cypher.VECTOR_BENCH_NODES_DELETE, limit=20_000, database_=settings.NEO4J_DATABASE
        )
        if not records[0]["deleted"]:
            return


def as_text(vectors: Matrix) -> list[str]:
    """Vectors as comma-separated text (see bench_cypher.VECTOR_BENCH_QUERY)."""
    template = ",".join(["%.8g"] * vectors.shape[1])
    return [template % tuple(vector.tolist()) for vector in vectors]


def neo4j_load(driver: Driver, base: Matrix) -> dict[str, Any]:
    neo4j_clear(driver)
    started = time.perf_counter()
    for start in range(0, len(base), 2000):
        rows = [{"vid": start + i, "csv": text} for i, text in enumerate(as_text(base[start : start + 2000]))]
        driver.execute_query(bench_cypher.VECTOR_BENCH_NODES_CREATE, rows=rows, database_=settings.NEO4J_DATABASE)
    load = _since(started)
    started = time.perf_counter()
    driver.execute_query(bench_cypher.vector_bench_index_create(base.shape[1]), database_=settings.NEO4J_DATABASE)
    with driver.session(database=settings.NEO4J_DATABASE) as session:
        session.run(bench_cypher.VECTOR_BENCH_INDEX_AWAIT, name=bench_cypher.VECTOR_BENCH_INDEX, seconds=3600).consume()
    return {"load_seconds": load, "build_seconds": _since(started)}


def neo4j_runs(driver: Driver, data: Dataset, args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    built = neo4j_load(driver, data.base)
    texts = as_text(data.queries)  # prepared once, like FAISS's float32 queries
    sessions = threading.local()  # a session per client thread, reused (auto-commit queries)
    server_ms: list[float] = []
    opened: list[Any] = []

    def search(k: int) -> Callable[[list[str]], list[list[int]]]:
        def run(queries: list[str]) -> list[list[int]]:
            if not hasattr(sessions, "session"):
                sessions.session = driver.session(database=settings.NEO4J_DATABASE)
                opened.append(sessions.session)
            result = sessions.session.run(
                bench_cypher.VECTOR_BENCH_QUERY, name=bench_cypher.VECTOR_BENCH_INDEX, k=k, vectors=queries
            )
            rows = [record["vids"][:K] for record in result]
            summary = result.consume()
            server_ms.append((summary.result_available_after or 0) + (summary.result_consumed_after or 0))
            return rows

        return run

    for k in args.neo4j_k:
        for i in range(10 * WARM_UP):  # the JVM compiles the hot paths first
            search(k)(texts[i % len(texts) : i % len(texts) + 1])
        server_ms.clear()
        qps_1, found = timed_queries(search(k), texts, 1, args.budget)
        server_1 = round(sum(server_ms) / len(server_ms), 2)
        qps_2 = concurrent_qps(search(k), texts, args.budget, 2)
        qps_64, _ = timed_queries(search(k), texts, 64, args.budget)
        rows = np.array([row + [-1] * (K - len(row)) for row in found], dtype=np.int64)
        yield {
            "dataset": data.name,
            "engine": "neo4j",
            "index": "vector (HNSW, Lucene)",
            "k_requested": k,
            **built,
            "qps_batch1": qps_1,
            "server_ms_batch1": server_1,
            "qps_batch1_2_clients": qps_2,
            "qps_batch64": qps_64,
            "recall_at_10": recall(rows, data.truth[: len(found)]),
        }
    for session in opened:
        session.close()
    neo4j_clear(driver)


def compare(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each Neo4j measurement, the fastest unfiltered FAISS setting with at least its recall, and the ratios."""
    out = []
    for neo in (row for row in results if row["engine"] == "neo4j"):
        rivals = [
            row
            for row in results
            if row["engine"] == "faiss"
            and row["dataset"] == neo["dataset"]
            and "filter" not in row
            and row["recall_at_10"] >= neo["recall_at_10"]
        ]
        if not rivals:
            continue
        best = max(rivals, key=lambda row: row["qps_batch1"])
        setting = {key: best[key] for key in ("index", "M", "efSearch", "nlist", "nprobe") if key in best}
        out.append(
            {
                "dataset": neo["dataset"],
                "neo4j_k": neo["k_requested"],
                "neo4j_recall": neo["recall_at_10"],
                "faiss": setting,
                "faiss_recall": best["recall_at_10"],
                "speedup_batch1": round(best["qps_batch1"] / neo["qps_batch1"], 1),
                "speedup_batch1_2_clients": round(best["qps_batch1_2_clients"] / neo["qps_batch1_2_clients"], 1),
                "speedup_batch64": round(best["qps_batch64"] / neo["qps_batch64"], 1),
            }
        )
    return out


# --- main --------------------------------------------------------------------------------------


def ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=ints, default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--neo4j-sizes", type=ints, default=[10_000, 100_000], help="sizes also loaded into Neo4j")
    parser.add_argument("--types", type=lambda s: s.split(","), default=["flat", "hnsw", "ivfpq"])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--budget", type=float, default=4.0, help="seconds of queries per measurement")
    parser.add_argument("--real", type=Path, help="a .npy of real embeddings (rows), measured as one more dataset")
    parser.add_argument(
        "--real-demo", type=int, default=0, help="also this many real sentences of the demo corpora, embedded here"
    )
    parser.add_argument("--real-queries", type=Path, help="a .npy of query embeddings for --real (default: held out)")
    parser.add_argument("--hnsw-m", type=int, default=settings.VECTORS_HNSW_M)
    parser.add_argument("--hnsw-ef-construction", type=int, default=settings.VECTORS_HNSW_EF_CONSTRUCTION)
    parser.add_argument("--hnsw-ef-search", type=ints, default=[settings.VECTORS_HNSW_EF_SEARCH, 32, 64, 128])
    parser.add_argument(
        "--hnsw-storage", type=lambda s: s.split(","), default=["fp16", "flat"], help="HNSW vector storages compared"
    )
    parser.add_argument("--hnsw-max", type=int, default=100_000, help="skip HNSW above this size (1M: ~15 min build)")
    parser.add_argument("--ivf-nlist", type=int, default=0, help="0: 256 below 50k vectors, else 1024")
    parser.add_argument("--ivf-m", type=int, default=settings.VECTORS_IVFPQ_M)
    parser.add_argument("--ivf-nprobe", type=ints, default=[settings.VECTORS_IVFPQ_NPROBE, 8, 64])
    parser.add_argument("--neo4j-k", type=ints, default=[10, 50], help="k asked of queryNodes (top 10 kept)")
    parser.add_argument("--out", type=Path, default=BASE_DIR / "benchmarks/results/vector_search.json")
    return parser.parse_args()


def demo_sentences(limit: int) -> tuple[Matrix, Matrix]:
    """Real embeddings: the sentences of the HotpotQA, MuSiQue and 2Wiki passages (at most ``limit``) by
    the configured text embedder, and the 200 multi-hop questions as queries."""
    import re

    from apps.ingest import corpora
    from apps.vectors.embedding import default_text_embed
    from benchmarks.answer_latency import questions_load

    data_dir = Path(settings.DEMO_DATA_DIR)
    passages = [
        *corpora.hotpotqa_passages(data_dir),
        *corpora.musique_passages(data_dir),
        *corpora.twowiki_passages(data_dir),
    ]
    sentences: list[str] = []
    for _, body in passages:
        sentences += [s for s in re.split(r"(?<=[.!?])\s+", body.decode("utf-8")) if len(s) > 20]
    sentences = list(dict.fromkeys(sentences))[:limit]
    embed = default_text_embed()
    base = np.concatenate([embed(sentences[i : i + 512]) for i in range(0, len(sentences), 512)])
    return base.astype(np.float32), np.asarray(embed(questions_load(data_dir)), dtype=np.float32)


def datasets(args: argparse.Namespace) -> Iterator[Dataset]:
    if args.real_demo:
        base, queries = demo_sentences(args.real_demo)
        faiss.normalize_L2(base)
        faiss.normalize_L2(queries)
        yield dataset(f"real:demo-sentences-{len(base)}", base, queries)
    if args.real is not None:
        real = np.load(args.real).astype(np.float32)
        queries = np.load(args.real_queries).astype(np.float32) if args.real_queries else real[-args.queries :]
        base = real if args.real_queries else real[: -args.queries]
        faiss.normalize_L2(base)
        faiss.normalize_L2(queries)
        yield dataset(f"real:{args.real.name}", base, queries)
    for n in args.sizes:  # exact ground truth at 1M costs ~0.2 s a query here: fewer queries
        yield dataset(f"synthetic-{n}", *synthetic(n, args.dim, args.queries if n < 1_000_000 else 200))


def main() -> int:
    args = arguments()
    started, load_before = time.perf_counter(), os.getloadavg()
    driver = get_driver() if args.neo4j_sizes else None
    results: list[dict[str, Any]] = []
    for data in datasets(args):
        for row in faiss_runs(data, args):
            log(row)
            results.append(row)
        if driver is not None and (len(data.base) in args.neo4j_sizes or data.name.startswith("real:")):
            for row in neo4j_runs(driver, data, args):
                log(row)
                results.append(row)
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**30
    report = {
        "benchmark": "vector_search",
        "command": "make bench-vectors" + (f' BENCH_ARGS="{" ".join(sys.argv[1:])}"' if sys.argv[1:] else ""),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {memory} GiB, "
        f"Python {platform.python_version()}, faiss {faiss.__version__}, {faiss.omp_get_max_threads()} OpenMP threads",
        "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "k": K,
        "seconds": _since(started),
        "results": results,
        "faiss_vs_neo4j": compare(results),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{len(results)} measurements in {report['seconds']}s; written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
