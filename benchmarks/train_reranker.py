"""Train the learned ranker (apps/answers/ranker.py) on the HotpotQA and MuSiQue tuning questions.

    make train-reranker      (the private Neo4j of bench-multihop; its corpora are ingested on the first run)

1. Collect: each tuning question is answered by the pipeline's retrieval with the hand-weighted order
   (bridges off, so every candidate keeps its hand score) and a pool of ``--pool`` candidates; each
   candidate's features (``candidate_features``) are written with its label: 1 when its passage is one
   of the question's supporting passages (HotpotQA's supporting facts, MuSiQue's ``is_supporting``).
   2WikiMultihopQA is never collected here: it is the validation set (``make bench-multihop``).
2. Cross-validate: five folds over the 200 questions (a question's candidates stay in one fold), each
   model variant trained on four and scored on the fifth: recall@2/5/10 and all supporting passages in
   the top 5, per dataset, beside the hand-weighted order of the same pools.
3. Fit the chosen variant on all 200 questions and write it as ONNX to apps/answers/data/reranker.onnx with
   its provenance (apps/answers/data/reranker.json); the exported model is measured in fp32 and int8 (recall
   on the validation pools with ``--validate``, else on the tuning pools; time for 30 candidates).

The model: standardised features -> ``--hidden`` units (tanh) -> one score, trained listwise (the softmax
over a question's pool against the supporting passages spread evenly), Adam with weight decay, a fixed
seed. Writes benchmarks/results/reranker_training.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import platform
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

TUNING = ("hotpotqa", "musique")
VALIDATION = ("2wiki",)
SEED = 20261206
FOLDS = 5


@dataclasses.dataclass
class Pool:
    dataset: str
    question: str
    features: np.ndarray  # one row per candidate, hand-weighted order
    labels: np.ndarray  # 1.0 for a supporting passage
    documents: list[str]
    supporting: list[str]


def collect(datasets: Sequence[str], pool: int, data_dir: Path) -> list[Pool]:
    import django

    django.setup()
    from apps.answers.evaluate import corpus_ensure, eval_collection
    from apps.answers.evaluation import eval_questions
    from apps.answers.pipeline import retrieve
    from apps.answers.ranker import candidate_features
    from apps.answers.rerank import BridgeParams
    from apps.answers.tools import default_tools, retrieval_params
    from apps.graph.driver import get_driver
    from apps.graph.schema import graph_schema_apply

    graph_schema_apply(driver=get_driver())
    tools = default_tools()
    params = dataclasses.replace(
        retrieval_params(mode="graph"), rerank_pool=pool, learned=False, bridges=BridgeParams(starts=0)
    )
    pools = []
    for dataset in datasets:
        corpus_ensure(dataset=dataset, data_dir=data_dir)
        for question in eval_questions(dataset, data_dir):
            retrieval = retrieve(
                question=question.question, collections=[eval_collection(dataset)], tools=tools, params=params
            )
            candidates = retrieval.candidates
            pools.append(
                Pool(
                    dataset=dataset,
                    question=question.question,
                    features=candidate_features(question.question, candidates),
                    labels=np.asarray([c.document in question.supporting for c in candidates], dtype=np.float32),
                    documents=[c.document for c in candidates],
                    supporting=sorted(question.supporting),
                )
            )
    return pools


def pool_metrics(pools: Sequence[Pool], scores: Sequence[np.ndarray]) -> dict[str, float]:
    """Recall@2/5/10 of the supporting passages and all of them in the top 5 (``make bench-multihop``'s
    measures), ordering each pool by ``scores``."""
    from apps.answers.evaluation import all_supporting_at, recall_at

    out: dict[str, list[float]] = {"R@2": [], "R@5": [], "R@10": [], "all@5": []}
    for pool, score in zip(pools, scores, strict=True):
        ranked = [pool.documents[i] for i in np.argsort(-score, kind="stable")]
        supporting = frozenset(pool.supporting)
        for k in (2, 5, 10):
            out[f"R@{k}"].append(recall_at(ranked, supporting, k))
        out["all@5"].append(float(all_supporting_at(ranked, supporting, 5)))
    return {name: round(float(np.mean(values)), 4) for name, values in out.items()}


@dataclasses.dataclass(frozen=True)
class Variant:
    hidden: int = 8
    epochs: int = 300
    weight_decay: float = 1e-3
    learning_rate: float = 0.01
    features: tuple[int, ...] | None = None  # columns used (None: all); the others are zeroed
    seed: int = SEED


def fit(pools: Sequence[Pool], variant: Variant) -> Scorer:
    torch.manual_seed(variant.seed)
    usable = [pool for pool in pools if pool.labels.sum() > 0]
    stacked = np.concatenate([pool.features for pool in usable])
    mean, std = stacked.mean(axis=0), stacked.std(axis=0) + 1e-6
    mask = np.ones(stacked.shape[1], dtype=np.float32)
    if variant.features is not None:
        mask[:] = 0.0
        mask[list(variant.features)] = 1.0
    model = Scorer(stacked.shape[1], variant.hidden, mean, std, mask)
    optimiser = torch.optim.Adam(model.parameters(), lr=variant.learning_rate, weight_decay=variant.weight_decay)
    width = max(len(pool.labels) for pool in usable)
    x = torch.zeros(len(usable), width, stacked.shape[1])
    target = torch.zeros(len(usable), width)
    present = torch.zeros(len(usable), width, dtype=torch.bool)
    for row, pool in enumerate(usable):
        size = len(pool.labels)
        x[row, :size] = torch.from_numpy(pool.features)
        target[row, :size] = torch.from_numpy(pool.labels / pool.labels.sum())
        present[row, :size] = True
    for _ in range(variant.epochs):
        optimiser.zero_grad()
        logits = model(x).masked_fill(~present, -1e9)
        loss = -(target * torch.log_softmax(logits, dim=1)).sum(dim=1).mean()
        loss.backward()  # type: ignore[no-untyped-call]
        optimiser.step()
    model.eval()
    return model


class Scorer(torch.nn.Module):
    """Standardised features (columns outside ``mask`` zeroed) -> ``hidden`` tanh units -> one score
    (``hidden`` 0: a linear score)."""

    def __init__(self, width: int, hidden: int, mean: np.ndarray, std: np.ndarray, mask: np.ndarray) -> None:
        super().__init__()
        self.mean = torch.nn.Buffer(torch.from_numpy(mean.astype(np.float32)))
        self.scale = torch.nn.Buffer(torch.from_numpy((mask / std).astype(np.float32)))
        layers: list[torch.nn.Module] = (
            [torch.nn.Linear(width, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1)]
            if hidden
            else [torch.nn.Linear(width, 1)]
        )
        self.net = torch.nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        standard: torch.Tensor = (x - self.mean) * self.scale
        out: torch.Tensor = self.net(standard)
        return out.squeeze(-1)


def predict(model: Scorer, pools: Sequence[Pool]) -> list[np.ndarray]:
    with torch.no_grad():
        return [model(torch.from_numpy(pool.features)).numpy() for pool in pools]


def folds_of(pools: Sequence[Pool]) -> list[int]:
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(pools))
    fold = [0] * len(pools)
    for position, index in enumerate(order):
        fold[index] = position % FOLDS
    return fold


def cross_validate(pools: Sequence[Pool], variant: Variant) -> dict[str, dict[str, float]]:
    fold = folds_of(pools)
    scores: list[np.ndarray] = [np.zeros(0)] * len(pools)
    for held in range(FOLDS):
        model = fit([p for p, f in zip(pools, fold, strict=True) if f != held], variant)
        held_out = [i for i, f in enumerate(fold) if f == held]
        for i, score in zip(held_out, predict(model, [pools[i] for i in held_out]), strict=True):
            scores[i] = score
    return by_dataset(pools, scores)


def by_dataset(pools: Sequence[Pool], scores: Sequence[np.ndarray]) -> dict[str, dict[str, float]]:
    out = {}
    for dataset in sorted({pool.dataset for pool in pools}):
        chosen = [i for i, pool in enumerate(pools) if pool.dataset == dataset]
        out[dataset] = pool_metrics([pools[i] for i in chosen], [scores[i] for i in chosen])
    return out


def hand_weighted(pools: Sequence[Pool]) -> dict[str, dict[str, float]]:
    """The pools in their collected (hand-weighted) order."""
    return by_dataset(pools, [-np.arange(len(pool.labels), dtype=np.float32) for pool in pools])


def export(model: Scorer, path: Path, width: int, *, int8: bool = False) -> None:
    """``model`` as ONNX (a batch of candidates in, one score each out); ``int8``: its weights quantised."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    float_path = path.with_suffix(".fp32.onnx") if int8 else path
    with warnings.catch_warnings():  # the TorchScript exporter (no onnxscript needed) says it is the legacy one
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            model,
            (torch.zeros(2, width),),
            str(float_path),
            input_names=["features"],
            output_names=["scores"],
            dynamic_axes={"features": {0: "candidates"}, "scores": {0: "candidates"}},
            opset_version=17,
            dynamo=False,
        )
    if int8:
        quantize_dynamic(str(float_path), str(path), weight_type=QuantType.QInt8)
        float_path.unlink()


def exported_metrics(model: Scorer, width: int, pools: Sequence[Pool], scratch: Path) -> dict[str, Any]:
    """The exported model's recall (onnxruntime, as the pipeline runs it) in fp32 and int8, and its time
    for 30 candidates (p50 of 1,000 calls, ms)."""
    from apps.answers.ranker import LearnedRanker

    out: dict[str, Any] = {}
    for name, int8 in (("fp32", False), ("int8", True)):
        path = scratch / f"reranker-{name}.onnx"
        export(model, path, width, int8=int8)
        ranker = LearnedRanker(path)
        out[name] = by_dataset(pools, [np.asarray(ranker.scores(pool.features)) for pool in pools])
        thirty = np.concatenate([pool.features for pool in pools])[:30]
        times = []
        for _ in range(1000):
            started = time.perf_counter()
            ranker.scores(thirty)
            times.append((time.perf_counter() - started) * 1000)
        out[name]["ms_for_30"] = round(float(np.median(times)), 4)
        out[name]["bytes"] = path.stat().st_size
    return out


def main() -> int:
    from apps.answers.ranker import FEATURES

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pool", type=int, default=80, help="candidates reranked per question")
    parser.add_argument("--hidden", type=int, default=8, help="hidden units (0: a linear model)")
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--cache", default=str(BASE_DIR / "var/reranker"), help="collected pools kept here")
    parser.add_argument("--data-dir", default=str(BASE_DIR.parent / "shared/data"))
    parser.add_argument("--ablations", action="store_true", help="also cross-validate each feature left out")
    parser.add_argument(
        "--validate",
        action="store_true",
        help="also report the models on 2Wiki dev300's pools (validation: never used to fit or choose)",
    )
    parser.add_argument(
        "--int8", action="store_true", help="ship the weights quantised to int8 (measured: no faster, recall lower)"
    )
    parser.add_argument("--out", default=str(BASE_DIR / "benchmarks/results/reranker_training.json"))
    parser.add_argument("--model", default=str(BASE_DIR / "apps/answers/data/reranker.onnx"))
    args = parser.parse_args()
    started = time.perf_counter()
    pools = pools_cached(TUNING, args.pool, Path(args.cache), Path(args.data_dir))
    validation = pools_cached(VALIDATION, args.pool, Path(args.cache), Path(args.data_dir)) if args.validate else []
    collected_s = time.perf_counter() - started
    variant = Variant(hidden=args.hidden, epochs=args.epochs)
    report: dict[str, Any] = {
        "questions": {dataset: sum(p.dataset == dataset for p in pools) for dataset in TUNING},
        "pool": args.pool,
        "features": list(FEATURES),
        "variant": dataclasses.asdict(variant),
        "hand_weighted": hand_weighted(pools),
        "cross_validated": cross_validate(pools, variant),
        "linear": cross_validate(pools, dataclasses.replace(variant, hidden=0)),
    }
    if args.ablations:
        report["without"] = {}
        for left, name in enumerate(FEATURES):
            ablated = dataclasses.replace(variant, features=tuple(i for i in range(len(FEATURES)) if i != left))
            report["without"][name] = cross_validate(pools, ablated)
            if validation:
                report["without"][name] |= by_dataset(validation, predict(fit(pools, ablated), validation))
    model = fit(pools, variant)
    if validation:
        report["validation"] = {
            "hand_weighted": hand_weighted(validation),
            "learned": by_dataset(validation, predict(model, validation)),
            "linear": by_dataset(validation, predict(fit(pools, dataclasses.replace(variant, hidden=0)), validation)),
        }
    model_path = Path(args.model)
    model_path.parent.mkdir(parents=True, exist_ok=True)
    export(model, model_path, len(FEATURES), int8=args.int8)
    report["trained_on_all"] = by_dataset(pools, predict(model, pools))
    report["exported"] = exported_metrics(model, len(FEATURES), validation or pools, Path(args.cache))
    report["model"] = {"path": str(model_path.relative_to(BASE_DIR)), "sha256": _sha256(model_path)}
    provenance = {
        "model": model_path.name,
        "trained_by": "make train-reranker (benchmarks/train_reranker.py)",
        "data": "the 100 HotpotQA and 100 MuSiQue tuning questions of ../shared/data/multihop (HippoRAG's train-split "
        "samples: HotpotQA CC BY-SA 4.0, MuSiQue CC BY 4.0) and the retrieval's candidates for them; no 2Wiki question",
        "licence": "CC BY-SA 4.0: the weights start from no pretrained model and are fitted by this script alone, on "
        "labels derived from HotpotQA (CC BY-SA 4.0, Yang et al. 2018) and MuSiQue (CC BY 4.0, Trivedi et al. 2022)",
        "features": list(FEATURES),
        "variant": dataclasses.asdict(variant),
        "pool": args.pool,
        "seed": SEED,
        "int8": args.int8,
    }
    model_path.with_suffix(".json").write_text(json.dumps(provenance, indent=2) + "\n")
    report["machine"] = machine()
    report["seconds"] = {"collect": round(collected_s, 1), "total": round(time.perf_counter() - started, 1)}
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    shown = ("hand_weighted", "cross_validated", "linear", "validation")
    print(json.dumps({k: report[k] for k in shown if k in report}, indent=1))
    return 0


def machine() -> dict[str, Any]:
    """The CPU (model, the vector extensions that matter here), its cores and the load average now."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "")
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    wanted = ("avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16")
    return {
        "cpu": model or platform.machine(),
        "flags": [flag for flag in wanted if flag in flags],
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
    }


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pools_cached(datasets: Sequence[str], pool: int, cache: Path, data_dir: Path) -> list[Pool]:
    """The datasets' pools, collected once per pool width and kept under ``cache`` (remove it after a
    change to the features or the retrieval)."""
    path = cache / f"pools-{'-'.join(datasets)}-{pool}.npz"
    if path.is_file():
        return pools_load(path)
    pools = collect(datasets, pool, data_dir)
    pools_save(pools, path)
    return pools


def pools_save(pools: Sequence[Pool], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = [
        {"dataset": p.dataset, "question": p.question, "documents": p.documents, "supporting": p.supporting}
        for p in pools
    ]
    arrays: dict[str, Any] = {f"features_{i}": p.features for i, p in enumerate(pools)}
    arrays |= {f"labels_{i}": p.labels for i, p in enumerate(pools)}
    arrays["meta"] = np.asarray(json.dumps(meta))
    np.savez_compressed(path, **arrays)


def pools_load(path: Path) -> list[Pool]:
    data = np.load(path)
    meta = json.loads(str(data["meta"]))
    return [Pool(features=data[f"features_{i}"], labels=data[f"labels_{i}"], **fields) for i, fields in enumerate(meta)]


if __name__ == "__main__":
    sys.exit(main())
