"""Faithfulness and cost of token attribution, on HotpotQA from ../shared/data/multihop.

    make bench-attribution      (no services needed; the generator runs in this process)

1. Copy cases (questions 0-49; the layer weights were calibrated on 50-99): the sources are a
   question's supporting paragraphs plus distractors, the answer is one supporting sentence copied
   word for word. Reported: the share of answer tokens whose top-1 unit is that sentence, in fast
   mode (attention and copied spans together, and each alone) and in exact mode for the first
   ``--exact-cases`` cases, with the agreement between the two.
2. Supporting facts (questions 0 to ``--questions``): the generator answers from the paragraphs; how
   often the sentences fast attribution ranks first over the whole answer are the dataset's
   ``supporting_facts``, against the share of supporting sentences among all (chance).
3. Cost: milliseconds per answer token and forward passes of each mode.
4. With ``--proxy WRITER:READER``: answers written by one model (an engine server's) and attributed by another
   (the local reader): top-1 agreement with the writer's own attribution, and supporting-fact precision of each.

Writes benchmarks/results/attribution_faithfulness.json and prints a summary.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

from django.conf import settings

from apps.models import registry
from apps.provenance import faithfulness
from apps.provenance.exact import ExactParams, agreement, exact_attribute
from apps.provenance.fast import calibrated_params, copy_scores, fast_attribute, layer_attention, unit_attention
from apps.provenance.units import unit_texts

PARAGRAPHS = 4
EVALUATION_QUESTIONS = slice(0, 50)


def offline_generator(key: str) -> Any:
    from apps.models.generator import OFFLINE_GENERATORS, load_offline

    return load_offline(OFFLINE_GENERATORS[key], cache_root=settings.MODEL_CACHE_DIR, device=settings.MODEL_DEVICE)


def _pooled(rows: list[tuple[float, int]]) -> float:
    tokens = sum(n for _, n in rows)
    return sum(acc * n for acc, n in rows) / tokens if tokens else 0.0


def copy_section(generator: Any, cases: list[faithfulness.Case], exact_cases: int, ablations: int) -> dict[str, Any]:
    base = calibrated_params(generator.name, settings.PROVENANCE_LEXICAL_WEIGHT)
    rows: dict[str, list[tuple[float, int]]] = {name: [] for name in ("fast", "attention_only", "copy_only", "exact")}
    agreements, fast_ms, exact_ms = [], [], []
    for number, case in enumerate(cases):
        layout = faithfulness.case_layout(case, generator.tokenizer)
        texts = unit_texts(case.sources, layout.units)
        tokens = len(layout.answer_ids)
        assert case.target is not None
        fast = fast_attribute(
            model=generator.model,
            model_name=generator.name,
            layout=layout,
            answer=case.answer,
            unit_texts=texts,
            params=base,
        )
        fast_ms.append(fast.seconds * 1000 / tokens)
        rows["fast"].append((faithfulness.copy_accuracy(fast, case.target), tokens))
        attention = unit_attention(layer_attention(generator.model, layout), layout, base)
        copied = copy_scores(case.answer, layout.answer_tokens, texts, base.min_copy)
        for name, scores in (("attention_only", attention), ("copy_only", copied)):
            alone = dataclasses.replace(fast, scores=scores)
            rows[name].append((faithfulness.copy_accuracy(alone, case.target), tokens))
        if number < exact_cases:
            exact = exact_attribute(
                model=generator.model, model_name=generator.name, layout=layout, params=ExactParams(ablations=ablations)
            )
            rows["exact"].append((faithfulness.copy_accuracy(exact, case.target), tokens))
            agreements.append(agreement(fast, exact))
            exact_ms.append(exact.seconds * 1000 / tokens)
    return {
        "cases": len(cases),
        "tokens": sum(n for _, n in rows["fast"]),
        "top1_right_share_of_copied_tokens": {name: round(_pooled(r), 4) for name, r in rows.items() if r},
        "exact_cases": len(rows["exact"]),
        "exact_ablations": ablations,
        "fast_vs_exact_top1_agreement": round(statistics.fmean(a["top1_agreement"] for a in agreements), 4)
        if agreements
        else None,
        "fast_top1_in_exact_top3": round(statistics.fmean(a["top1_in_exact_top3"] for a in agreements), 4)
        if agreements
        else None,
        "fast_ms_per_token": round(statistics.median(fast_ms), 2),
        "exact_ms_per_token": round(statistics.median(exact_ms), 2) if exact_ms else None,
    }


def supporting_section(generator: Any, cases: list[faithfulness.Case], max_new_tokens: int) -> dict[str, Any]:
    params = calibrated_params(generator.name, settings.PROVENANCE_LEXICAL_WEIGHT)
    top1, precision2, chance, ms, generation_s = [], [], [], [], []
    for case in cases:
        started = time.perf_counter()
        answer = generator.generate(case.user, system=case.system, max_new_tokens=max_new_tokens)
        generation_s.append(time.perf_counter() - started)
        if not answer:
            continue
        layout = faithfulness.case_layout(case, generator.tokenizer, answer)
        attribution = fast_attribute(
            model=generator.model,
            model_name=generator.name,
            layout=layout,
            answer=answer,
            unit_texts=unit_texts(case.sources, layout.units),
            params=params,
        )
        ranked = faithfulness.top_sentences(attribution, 2)
        if not ranked:
            continue
        top1.append(ranked[0] in case.supporting)
        precision2.append(np.mean([unit in case.supporting for unit in ranked]))
        chance.append(len(case.supporting) / max(1, len(layout.units)))
        ms.append(attribution.seconds * 1000 / max(1, len(layout.answer_ids)))
    return {
        "questions": len(cases),
        "attributed": len(top1),
        "top1_is_supporting_fact": round(float(np.mean(top1)), 4) if top1 else None,
        "top2_precision": round(float(np.mean(precision2)), 4) if precision2 else None,
        "chance": round(float(np.mean(chance)), 4) if chance else None,
        "fast_ms_per_token": round(statistics.median(ms), 2) if ms else None,
        "generation_seconds_p50": round(statistics.median(generation_s), 2) if generation_s else None,
    }


def proxy_section(
    writer: Any, readers: list[Any], cases: list[faithfulness.Case], max_new_tokens: int
) -> dict[str, Any]:
    """The writer answers each question (as an engine server would); the writer attributes its own answer
    and every reader (a local model reading that answer, as with an engine server) does too. Reported per
    reader: top-1 agreement with the writer's own attribution (token by token of the writer's tokens) and
    how often each one's best sentence over the answer is a supporting fact."""

    def attribute(model: Any, case: faithfulness.Case, answer: str) -> Any:
        layout = faithfulness.case_layout(case, model.tokenizer, answer)
        return fast_attribute(
            model=model.model,
            model_name=model.name,
            layout=layout,
            answer=answer,
            unit_texts=unit_texts(case.sources, layout.units),
            params=calibrated_params(model.name, settings.PROVENANCE_LEXICAL_WEIGHT),
        )

    own_top1: list[bool] = []
    rows: dict[str, dict[str, list[Any]]] = {r.name: {"agree": [], "tokens": [], "top1": [], "ms": []} for r in readers}
    for case in cases:
        answer = writer.generate(case.user, system=case.system, max_new_tokens=max_new_tokens)
        if not answer:
            continue
        own = attribute(writer, case, answer)
        best = faithfulness.top_sentences(own, 1)
        if not best:
            continue
        own_top1.append(best[0] in case.supporting)
        for reader in readers:
            proxy = attribute(reader, case, answer)
            agreed = faithfulness.proxy_agreement(own, proxy)
            row = rows[reader.name]
            row["agree"].append(agreed["top1_agreement"] * agreed["tokens"])
            row["tokens"].append(agreed["tokens"])
            ranked = faithfulness.top_sentences(proxy, 1)
            row["top1"].append(bool(ranked) and ranked[0] in case.supporting)
            row["ms"].append(proxy.seconds * 1000)
    return {
        "writer": writer.name,
        "questions": len(cases),
        "answers": len(own_top1),
        "own_top1_is_supporting_fact": round(float(np.mean(own_top1)), 4) if own_top1 else None,
        "readers": {
            name: {
                "top1_agreement_with_own": round(sum(row["agree"]) / max(1, sum(row["tokens"])), 4),
                "tokens": int(sum(row["tokens"])),
                "top1_is_supporting_fact": round(float(np.mean(row["top1"])), 4) if row["top1"] else None,
                "attribution_ms_p50": round(statistics.median(row["ms"]), 1) if row["ms"] else None,
            }
            for name, row in rows.items()
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=30, help="supporting-fact questions (generation on)")
    parser.add_argument("--copy-cases", type=int, default=0, help="the first N copy cases (0: all)")
    parser.add_argument("--exact-cases", type=int, default=10)
    parser.add_argument("--ablations", type=int, default=settings.PROVENANCE_EXACT_ABLATIONS)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument(
        "--proxy",
        default="",
        help="WRITER:READER[+READER...] offline generator keys: the writer answers (as an engine server would) and "
        "each reader attributes its answers; agreement with the writer's own attribution "
        "(e.g. qwen2.5-1.5b:qwen2.5-0.5b)",
    )
    parser.add_argument("--proxy-questions", type=int, default=20)
    parser.add_argument("--out", default=str(BASE_DIR / "benchmarks/results/attribution_faithfulness.json"))
    args = parser.parse_args()
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    started = time.perf_counter()
    generator = registry.generator()

    def count(text: str) -> int:
        return len(generator.tokenizer.encode(text, add_special_tokens=False))

    items = faithfulness.hotpotqa_items(Path(settings.DEMO_DATA_DIR))[EVALUATION_QUESTIONS]
    cases = faithfulness.copy_cases(items, paragraphs=PARAGRAPHS, count_tokens=count)
    copies = copy_section(
        generator,
        cases[: args.copy_cases or None],
        args.exact_cases,
        args.ablations,
    )
    support = supporting_section(
        generator,
        faithfulness.question_cases(items[: args.questions], paragraphs=PARAGRAPHS, count_tokens=count),
        args.max_new_tokens,
    )
    proxies = []
    for pair in filter(None, args.proxy.split(",")):
        writer_key, _, reader_keys = pair.partition(":")
        writer = offline_generator(writer_key)
        readers = [offline_generator(key) for key in reader_keys.split("+") if key]
        cases = faithfulness.question_cases(items[: args.proxy_questions], paragraphs=PARAGRAPHS, count_tokens=count)
        proxies.append(proxy_section(writer, readers, cases, args.max_new_tokens))
        print(json.dumps(proxies[-1], indent=2), flush=True)
    report = {
        "benchmark": "attribution_faithfulness",
        "command": "make bench-attribution " + " ".join(sys.argv[1:]),
        "load_average": os.getloadavg(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}, torch CPU",
        "model": generator.name,
        "paragraphs_per_case": PARAGRAPHS,
        "calibration": calibrated_params(generator.name, 0.0).layer_weights != (),
        "copy_cases": copies,
        "supporting_facts": support,
        "proxy_readers": proxies,
        "cost": {
            "fast": {"forward_passes": 2, "ms_per_answer_token": copies["fast_ms_per_token"]},
            "exact": {"forward_passes": args.ablations, "ms_per_answer_token": copies["exact_ms_per_token"]},
        },
        "seconds": round(time.perf_counter() - started, 1),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: report[k] for k in ("copy_cases", "supporting_facts", "cost")}, indent=2))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
