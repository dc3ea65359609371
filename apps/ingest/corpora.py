"""Readers for the evaluation and demo data in ../shared/data (see its README)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".gif"}


def _safe_name(title: str) -> str:
    return re.sub(r"[^\w .,()'-]+", "_", title).strip()[:150] or "untitled"


def passage_file(*, folder: str, title: str, text: str) -> tuple[str, bytes]:
    """A passage as a small text document: its title as the first line."""
    return f"{folder}/{_safe_name(title)}.txt", f"{title}\n\n{text.strip()}\n".encode()


def hotpotqa_passages(data_dir: Path) -> Iterator[tuple[str, bytes]]:
    corpus: dict[str, list[str]] = json.loads((data_dir / "multihop/hipporag_hotpotqa_train_corpus.json").read_text())
    for title, sentences in corpus.items():
        yield passage_file(folder="hotpotqa", title=title, text="".join(sentences))


def twowiki_passages(data_dir: Path) -> Iterator[tuple[str, bytes]]:
    corpus: list[dict[str, str]] = json.loads((data_dir / "multihop/hipporag_2wikimultihopqa_corpus.json").read_text())
    for passage in corpus:
        yield passage_file(folder="2wiki", title=passage["title"], text=passage["text"])


def image_files(data_dir: Path) -> Iterator[tuple[str, bytes]]:
    for path in sorted((data_dir / "images").iterdir()):
        if path.suffix.lower() in IMAGE_SUFFIXES:
            yield f"images/{path.name}", path.read_bytes()


def table_files(data_dir: Path, *, wtq_limit: int | None = None) -> Iterator[tuple[str, bytes]]:
    for path in sorted((data_dir / "tables/seaborn").glob("*.csv")):
        yield f"tables/seaborn/{path.name}", path.read_bytes()
    wtq = sorted((data_dir / "tables/wtq/csv").glob("*/*.csv"))
    for path in wtq[:wtq_limit]:
        yield f"tables/wtq/{path.parent.name}/{path.name}", path.read_bytes()


def demo_files(data_dir: Path) -> list[tuple[str, bytes]]:
    """The demo corpus: every HotpotQA passage, every image, and some tables."""
    return [*hotpotqa_passages(data_dir), *image_files(data_dir), *table_files(data_dir, wtq_limit=10)]
