"""The multilingual text space's cosines on the text space's scale: VECTORS_MTEXT_SCALE and _OFFSET.

    make bench-space-scale      (no services: the two encoders alone)

Results of both text spaces are merged into one ranking and meet the same "not found" thresholds
(apps/vectors/spaces.py), so a cosine of multilingual-e5-small must mean what the same cosine of
all-MiniLM-L6-v2 means. On the tuning sets' questions (HotpotQA and MuSiQue), each encoder gives the
mean cosine of a question with its supporting passages (``gold``) and with passages of its corpus
drawn at random (``negative``: what an unrelated passage scores); the map ``scale * cosine + offset``
sends e5's two means onto MiniLM's. 2WikiMultihopQA dev300 is the check: how far the mapped means
land from MiniLM's there. Writes
benchmarks/results/space_scale.json (--out); its ``scale`` and ``offset`` are the settings' defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

import django

django.setup()

from django.conf import settings

from apps.ingest import corpora
from apps.models.interfaces import TextEmbedder
from apps.models.text import load_e5, load_minilm

Item = tuple[str, list[str], list[bool]]  # question, paragraphs, which support it
NEGATIVES = 9  # corpus passages per question that do not support it


def _with_negatives(items: Iterator[tuple[str, list[str]]], corpus: list[str], seed: int) -> Iterator[Item]:
    """Each question's supporting passages and NEGATIVES others of its corpus, drawn at random."""
    rng = random.Random(seed)
    for question, gold in items:
        others = [text for text in rng.sample(corpus, NEGATIVES + len(gold)) if text not in gold][:NEGATIVES]
        yield question, gold + others, [True] * len(gold) + [False] * len(others)


def _texts(passages: Iterator[tuple[str, bytes]]) -> list[str]:
    return [data.decode().strip() for _, data in passages]


def hotpotqa(data_dir: Path) -> Iterator[Item]:
    def gold() -> Iterator[tuple[str, list[str]]]:
        for item in json.loads((data_dir / "multihop/hipporag_hotpotqa_train.json").read_text()):
            titles = {title for title, _ in item["supporting_facts"]}
            yield item["question"], [f"{t}\n\n{''.join(s).strip()}" for t, s in item["context"] if t in titles]

    return _with_negatives(gold(), _texts(corpora.hotpotqa_passages(data_dir)), 1)


def musique(data_dir: Path) -> Iterator[Item]:
    def gold() -> Iterator[tuple[str, list[str]]]:
        for item in json.loads((data_dir / "multihop/hipporag_musique_train.json").read_text()):
            supporting = [p for p in item["paragraphs"] if p["is_supporting"]]
            yield item["question"], [f"{p['title']}\n\n{p['paragraph_text'].strip()}" for p in supporting]

    return _with_negatives(gold(), _texts(corpora.musique_passages(data_dir)), 2)


def twowiki(data_dir: Path) -> Iterator[Item]:
    corpus = _texts(corpora.twowiki_passages(data_dir))
    by_title = {text.partition("\n\n")[0]: text for text in corpus}

    def gold() -> Iterator[tuple[str, list[str]]]:
        for item in json.loads((data_dir / "multihop/2wikimultihopqa_dev300.json").read_text())["questions"]:
            yield item["question"], [by_title[t] for t in item["supporting_titles"] if t in by_title]

    return _with_negatives(gold(), corpus, 3)


def means(embedder: TextEmbedder, items: list[Item]) -> dict[str, float]:
    """Mean cosine of the questions with their supporting passages and with passages that do not support them."""
    gold, negative = [], []
    for question, paragraphs, supporting in items:
        scores = embedder.embed_documents(paragraphs) @ embedder.embed_queries([question])[0]
        gold += [float(score) for score, yes in zip(scores, supporting, strict=True) if yes]
        negative += [float(score) for score, yes in zip(scores, supporting, strict=True) if not yes]
    return {"gold": statistics.fmean(gold), "negative": statistics.fmean(negative)}


def xquad_pairs(data_dir: Path, embedder: TextEmbedder, every: int) -> dict[str, dict[str, float]]:
    """e5's mean cosine of XQuAD questions with their paragraph (``gold``: the fit half of the articles,
    the even ones, and the check half) and with every paragraph (``unrelated``), per pair of languages."""
    data = {language: corpora.xquad(data_dir, language) for language in ("en", "zh")}
    vectors = {language: embedder.embed_documents(xquad.paragraphs) for language, xquad in data.items()}
    chosen = range(0, len(data["en"].questions), every)
    asked = {language: embedder.embed_queries([xquad.questions[i] for i in chosen]) for language, xquad in data.items()}
    # (the question's paragraph, whether its article is in the fit half: the even-numbered ones)
    places = [(data["en"].gold[i], data["en"].articles[data["en"].gold[i]] % 2 == 0) for i in chosen]
    pairs = {}
    for question in data:
        for passage in data:
            scores = asked[question] @ vectors[passage].T
            gold = [(float(scores[row, paragraph]), fit) for row, (paragraph, fit) in enumerate(places)]
            pairs[f"{question}->{passage}"] = {
                "gold_fit": statistics.fmean(score for score, fit in gold if fit),
                "gold_check": statistics.fmean(score for score, fit in gold if not fit),
                "unrelated": float(scores.mean()),
            }
    return pairs


def _map(target: tuple[float, float], source: tuple[float, float]) -> tuple[float, float]:
    """(scale, offset) sending ``source``'s (gold, unrelated) means onto ``target``'s."""
    scale = (target[0] - target[1]) / (source[0] - source[1])
    return scale, target[0] - scale * source[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=40, help="questions per set")
    parser.add_argument("--out", default=str(BASE_DIR / "benchmarks/results/space_scale.json"))
    args = parser.parse_args()
    data_dir = Path(settings.DEMO_DATA_DIR)
    sets = {
        "hotpotqa": list(hotpotqa(data_dir))[: args.questions],
        "musique": list(musique(data_dir))[: args.questions],
        "2wiki": list(twowiki(data_dir))[: args.questions],
    }
    encoders: dict[str, TextEmbedder] = {
        "text": load_minilm(device="cpu", batch_size=32),
        "mtext": load_e5(batch_size=16),
    }
    measured = {
        space: {name: means(embedder, items) for name, items in sets.items()} for space, embedder in encoders.items()
    }

    def pooled(space: str, key: str) -> float:
        return statistics.fmean(measured[space][name][key] for name in ("hotpotqa", "musique"))

    scale = (pooled("text", "gold") - pooled("text", "negative")) / (
        pooled("mtext", "gold") - pooled("mtext", "negative")
    )
    offset = pooled("text", "gold") - scale * pooled("mtext", "gold")
    check = {
        key: {
            "text": round(measured["text"]["2wiki"][key], 4),
            "mtext mapped": round(scale * measured["mtext"]["2wiki"][key] + offset, 4),
        }
        for key in ("gold", "negative")
    }
    # Chinese passages and questions across scripts score otherwise: their own maps, fitted on XQuAD's
    # even articles (there is no Chinese or cross-language tuning set) and checked on the odd ones.
    pairs = xquad_pairs(data_dir, encoders["mtext"], every=4)
    target = (pooled("text", "gold"), pooled("text", "negative"))
    chinese = _map(target, (pairs["zh->zh"]["gold_fit"], pairs["zh->zh"]["unrelated"]))
    cross = _map(
        target,
        (
            statistics.fmean(pairs[p]["gold_fit"] for p in ("en->zh", "zh->en")),
            statistics.fmean(pairs[p]["unrelated"] for p in ("en->zh", "zh->en")),
        ),
    )
    maps = {"zh->zh": chinese, "en->zh": cross, "zh->en": cross, "en->en": (scale, offset)}
    xquad = {
        pair: {**{key: round(value, 4) for key, value in row.items()},
               "gold_check_mapped": round(maps[pair][0] * row["gold_check"] + maps[pair][1], 4)}
        for pair, row in pairs.items()
    }  # fmt: skip
    rounded = {
        space: {name: {key: round(value, 4) for key, value in row.items()} for name, row in rows.items()}
        for space, rows in measured.items()
    }
    report = {
        "benchmark": "space_scale",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
        "questions_per_set": args.questions,
        "load_average": os.getloadavg(),
        "means": rounded,
        "scale": round(scale, 4),
        "offset": round(offset, 4),
        "validation_2wiki": check,
        "cjk": {"scale": round(chinese[0], 4), "offset": round(chinese[1], 4)},
        "cross_script": {"scale": round(cross[0], 4), "offset": round(cross[1], 4)},
        "xquad": xquad,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    shown = ("scale", "offset", "validation_2wiki", "cjk", "cross_script", "xquad")
    print(json.dumps({key: report[key] for key in shown}, indent=2))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
