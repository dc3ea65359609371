"""Readers for the evaluation and demo data in ../shared/data (see its README)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".gif"}


def safe_name(title: str) -> str:
    return re.sub(r"[^\w .,()'-]+", "_", title).strip()[:150] or "untitled"


def passage_file(*, folder: str, title: str, text: str, number: int = 1) -> tuple[str, bytes]:
    """A passage as a small text document: its title as the first line.

    Corpora repeat titles for different passages; ``number`` > 1 keeps their names apart.
    """
    suffix = f" ({number})" if number > 1 else ""
    return f"{folder}/{safe_name(title)}{suffix}.txt", f"{title}\n\n{text.strip()}\n".encode()


def _numbered(passages: Iterator[tuple[str, str]], folder: str) -> Iterator[tuple[str, bytes]]:
    seen: dict[str, int] = {}
    for title, text in passages:
        key = safe_name(title).casefold()
        seen[key] = seen.get(key, 0) + 1
        yield passage_file(folder=folder, title=title, text=text, number=seen[key])


def hotpotqa_passages(data_dir: Path) -> Iterator[tuple[str, bytes]]:
    corpus: dict[str, list[str]] = json.loads((data_dir / "multihop/hipporag_hotpotqa_train_corpus.json").read_text())
    yield from _numbered(((title, "".join(sentences)) for title, sentences in corpus.items()), "hotpotqa")


def twowiki_passages(data_dir: Path) -> Iterator[tuple[str, bytes]]:
    corpus: list[dict[str, str]] = json.loads((data_dir / "multihop/hipporag_2wikimultihopqa_corpus.json").read_text())
    yield from _numbered(((p["title"], p["text"]) for p in corpus), "2wiki")


def musique_passages(data_dir: Path) -> Iterator[tuple[str, bytes]]:
    corpus: list[dict[str, str]] = json.loads((data_dir / "multihop/hipporag_musique_train_corpus.json").read_text())
    yield from _numbered(((p["title"], p["text"]) for p in corpus), "musique")


def xquad_paragraphs(data_dir: Path, language: str) -> Iterator[tuple[str, bytes]]:
    """XQuAD's 240 context paragraphs in one language (en, zh, ar)."""
    squad = json.loads((data_dir / f"multilingual/xquad/xquad.{language}.json").read_text())
    for article in squad["data"]:
        for number, paragraph in enumerate(article["paragraphs"]):
            title = f"{article['title']} {number + 1}"
            yield passage_file(folder=f"xquad-{language}", title=title, text=paragraph["context"])


@dataclass(frozen=True)
class XQuAD:
    """XQuAD in one language: its paragraphs and questions in order, each question's paragraph (an
    index into ``paragraphs``) and each paragraph's article (its number). Every language holds the
    same paragraphs and questions in the same order."""

    paragraphs: list[str]
    questions: list[str]
    gold: list[int]
    articles: list[int]


def xquad(data_dir: Path, language: str) -> XQuAD:
    squad = json.loads((data_dir / f"multilingual/xquad/xquad.{language}.json").read_text())
    found = XQuAD([], [], [], [])
    for number, article in enumerate(squad["data"]):
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                found.questions.append(qa["question"])
                found.gold.append(len(found.paragraphs))
            found.paragraphs.append(paragraph["context"])
            found.articles.append(number)
    return found


def image_files(data_dir: Path) -> Iterator[tuple[str, bytes]]:
    for path in sorted((data_dir / "images").iterdir()):
        if path.suffix.lower() in IMAGE_SUFFIXES:
            yield f"images/{path.name}", path.read_bytes()


def table_files(data_dir: Path, *, wtq_limit: int | None = None, suffix: str = ".csv") -> Iterator[tuple[str, bytes]]:
    for path in sorted((data_dir / "tables/seaborn").glob("*.csv")):
        yield f"tables/seaborn/{path.name}", path.read_bytes()
    wtq = sorted((data_dir / "tables/wtq/csv").glob(f"*/*{suffix}"))
    for path in wtq[:wtq_limit]:
        yield f"tables/wtq/{path.parent.name}/{path.name}", path.read_bytes()


def demo_files(data_dir: Path) -> list[tuple[str, bytes]]:
    """The demo corpus: every HotpotQA passage, every image, and some tables."""
    return [*hotpotqa_passages(data_dir), *image_files(data_dir), *table_files(data_dir, wtq_limit=10)]


def passage_names(passages: Iterator[tuple[str, bytes]]) -> dict[str, str]:
    """Each passage's text (without its title line) -> the file name it is ingested under."""
    names: dict[str, str] = {}
    for name, data in passages:
        _title, _, text = data.decode().partition("\n\n")
        names.setdefault(" ".join(text.split()), name)
    return names
