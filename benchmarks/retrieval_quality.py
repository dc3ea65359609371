"""Retrieval quality of the offline models on ../shared/data.

    make bench-quality

1. Cross-language retrieval on XQuAD: the 1,190 questions in English, Chinese and Arabic against
   the 240 English paragraphs; recall@1 and recall@5 of the paragraph each question was asked on,
   for every offline text embedder (all-MiniLM-L6-v2, multilingual-e5-small).
2. Text-to-image retrieval on the 24 images: each caption against every image; recall@1 and @5 of
   its own image. Offline profile: the image's text (ImageNet labels, descriptions, OCR) embedded
   in the text space. The CLIP space needs CLIP weights, which no package ships: the hub profile's
   figure is measured where the hub is reachable (`--clip`), never here.

Writes benchmarks/results/retrieval_quality.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
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
from PIL import Image

from apps.ingest import corpora
from apps.models.devices import embed_batch_size
from apps.models.interfaces import TextEmbedder, Vectors
from apps.models.registry import image_tagger
from apps.models.text import load_e5, load_minilm

LANGUAGES = ("en", "zh", "ar")


def recall_at(scores: Vectors, gold: list[int], k: int) -> float:
    """Fraction of rows whose gold column is among the ``k`` best scores."""
    top = np.argsort(-scores, axis=1)[:, :k]
    return float(np.mean([gold[row] in top[row] for row in range(len(gold))]))


def cross_language(embedder: TextEmbedder, data_dir: Path) -> dict[str, Any]:
    english = corpora.xquad(data_dir, "en").paragraphs
    started = time.perf_counter()
    passages = embedder.embed_documents(english)
    results: dict[str, Any] = {"model": embedder.name}
    for language in LANGUAGES:
        asked = corpora.xquad(data_dir, language)
        questions, gold = asked.questions, asked.gold
        scores = embedder.embed_queries(questions) @ passages.T
        results[f"{language}->en"] = {
            "questions": len(questions),
            "recall@1": round(recall_at(scores, gold, 1), 3),
            "recall@5": round(recall_at(scores, gold, 5), 3),
        }
    results["seconds"] = round(time.perf_counter() - started, 1)
    return results


def text_to_image(embedder: TextEmbedder, data_dir: Path) -> dict[str, Any]:
    listing = json.loads((data_dir / "images/captions.json").read_text())["images"]
    images = []
    for entry in listing:
        with Image.open(data_dir / "images" / entry["file"]) as image:
            images.append(image.convert("RGB"))
    descriptions = image_tagger().describe(images)
    image_vectors = embedder.embed_documents([description.text for description in descriptions])
    captions = [(caption, number) for number, entry in enumerate(listing) for caption in entry["captions"]]
    scores = embedder.embed_queries([caption for caption, _ in captions]) @ image_vectors.T
    gold = [number for _, number in captions]
    top = np.argsort(-scores, axis=1)[:, 0]
    return {
        "space": "text (image labels, descriptions and OCR text)",
        "model": embedder.name,
        "captions": len(captions),
        "recall@1": round(recall_at(scores, gold, 1), 3),
        "recall@5": round(recall_at(scores, gold, 5), 3),
        "found_first": sorted(listing[number]["file"] for number, best in enumerate(top) if best == gold[number]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=BASE_DIR / "benchmarks/results/retrieval_quality.json")
    args = parser.parse_args()
    data_dir = Path(settings.DEMO_DATA_DIR)
    embedders: list[TextEmbedder] = [
        load_minilm(device="cpu", batch_size=embed_batch_size("cpu", settings.EMBED_BATCH_SIZE)),
        load_e5(batch_size=embed_batch_size("cpu", settings.EMBED_BATCH_SIZE)),
    ]
    cross = [cross_language(embedder, data_dir) for embedder in embedders]
    images = [text_to_image(embedder, data_dir) for embedder in embedders]
    report = {
        "benchmark": "retrieval_quality",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
        "cross_language": cross,
        "text_to_image": {"offline": images},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for row in cross:
        cells = "  ".join(f"{lang}->en R@5 {row[f'{lang}->en']['recall@5']:.3f}" for lang in LANGUAGES)
        print(f"{row['model']:<24} {cells}")
    for row in images:
        print(f"images via text, {row['model']:<24} R@1 {row['recall@1']:.3f}  R@5 {row['recall@5']:.3f}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
