"""Multi-hop retrieval evaluation on HotpotQA, MuSiQue and 2WikiMultihopQA from ../shared/data/multihop.

HotpotQA and MuSiQue are the samples settings are tuned on; 2WikiMultihopQA dev300 is the
validation set, never tuned on (docs/answering.md). Each question names its supporting passages
(and carries them, with one that does not support it, as its gold passages); a retrieval's
passage recall@k is the share of them among the first k distinct documents it ranks (each
corpus passage is one document).
Answers, when generated, are scored by SQuAD-style exact match and token F1 against the
answer and its aliases.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from apps.ingest import corpora

DATASETS = ("hotpotqa", "musique", "2wiki")


@dataclass(frozen=True)
class EvalQuestion:
    id: str
    question: str
    answers: tuple[str, ...]
    supporting: frozenset[str]  # document paths
    # the gold passages (title, text): the supporting ones, then one that does not support the answer
    gold: tuple[tuple[str, str], ...] = ()


def _key(text: str) -> str:
    return " ".join(text.split())


def _hotpotqa(data_dir: Path) -> Iterator[EvalQuestion]:
    names = {
        name.removeprefix("hotpotqa/").removesuffix(".txt"): name for name, _ in corpora.hotpotqa_passages(data_dir)
    }
    for item in json.loads((data_dir / "multihop/hipporag_hotpotqa_train.json").read_text()):
        titles = list(dict.fromkeys(title for title, _sentence in item["supporting_facts"]))
        supporting = frozenset(names[corpora.safe_name(title)] for title in titles if corpora.safe_name(title) in names)
        context = {title: "".join(sentences).strip() for title, sentences in item["context"]}
        distractor = [title for title in context if title not in titles][:1]
        gold = tuple((title, context[title]) for title in [*titles, *distractor] if title in context)
        yield EvalQuestion(item["_id"], item["question"], (item["answer"],), supporting, gold)


def _musique(data_dir: Path) -> Iterator[EvalQuestion]:
    names = corpora.passage_names(corpora.musique_passages(data_dir))
    for item in json.loads((data_dir / "multihop/hipporag_musique_train.json").read_text()):
        texts = [_key(p["paragraph_text"]) for p in item["paragraphs"] if p["is_supporting"]]
        supporting = frozenset(names[text] for text in texts if text in names)
        paragraphs = [p for p in item["paragraphs"] if p["is_supporting"]]
        paragraphs += [p for p in item["paragraphs"] if not p["is_supporting"]][:1]
        gold = tuple((p["title"], p["paragraph_text"].strip()) for p in paragraphs)
        answers = (item["answer"], *item.get("answer_aliases", []))
        yield EvalQuestion(item["id"], item["question"], answers, supporting, gold)


def _twowiki(data_dir: Path) -> Iterator[EvalQuestion]:
    """2WikiMultihopQA dev300: the supporting titles name corpus passages (the first passage of a
    title when the corpus repeats it); the distractor is a passage picked by the question's id."""
    passages = list(corpora.twowiki_passages(data_dir))
    by_title: dict[str, tuple[str, str]] = {}
    for name, data in passages:
        title, _, text = data.decode().partition("\n\n")
        by_title.setdefault(title, (name, text.strip()))
    items = json.loads((data_dir / "multihop/2wikimultihopqa_dev300.json").read_text())["questions"]
    for item in items:
        titles = [title for title in item["supporting_titles"] if title in by_title]
        supporting = frozenset(by_title[title][0] for title in titles)
        other = passages[int(item["id"][:8], 16) % len(passages)]
        other_title, _, other_text = other[1].decode().partition("\n\n")
        gold = tuple((title, by_title[title][1]) for title in titles)
        if other[0] not in supporting:
            gold += ((other_title, other_text.strip()),)
        yield EvalQuestion(item["id"], item["question"], (item["answer"],), supporting, gold)


def eval_questions(dataset: str, data_dir: Path) -> list[EvalQuestion]:
    """The dataset's questions with their supporting passages' document paths."""
    if dataset not in DATASETS:
        raise ValueError(f"unknown dataset {dataset!r} (choose from {', '.join(DATASETS)})")
    readers = {"hotpotqa": _hotpotqa, "musique": _musique, "2wiki": _twowiki}
    return [q for q in readers[dataset](data_dir) if q.supporting]


def eval_corpus(dataset: str, data_dir: Path) -> list[tuple[str, bytes]]:
    readers = {
        "hotpotqa": corpora.hotpotqa_passages,
        "musique": corpora.musique_passages,
        "2wiki": corpora.twowiki_passages,
    }
    return list(readers[dataset](data_dir))


def distinct_documents(ranked: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ranked))


def recall_at(ranked_documents: Sequence[str], supporting: frozenset[str], k: int) -> float:
    if not supporting:
        return 0.0
    return len(supporting & set(distinct_documents(ranked_documents)[:k])) / len(supporting)


def normalise_answer(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(char for char in text.lower() if char not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    return float(any(normalise_answer(prediction) == normalise_answer(answer) for answer in answers))


def f1_score(prediction: str, answers: Sequence[str]) -> float:
    def f1(answer: str) -> float:
        predicted, gold = normalise_answer(prediction).split(), normalise_answer(answer).split()
        common = sum((Counter(predicted) & Counter(gold)).values())
        if not common:
            return 0.0
        precision, recall = common / len(predicted), common / len(gold)
        return 2 * precision * recall / (precision + recall)

    return max((f1(answer) for answer in answers), default=0.0)


@dataclass
class ModeReport:
    mode: str
    questions: int
    recall: dict[int, float]
    exact_match: float | None = None
    f1: float | None = None
    p50_ms: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "questions": self.questions,
            **{f"recall@{k}": round(value, 4) for k, value in sorted(self.recall.items())},
            "exact_match": None if self.exact_match is None else round(self.exact_match, 4),
            "f1": None if self.f1 is None else round(self.f1, 4),
            "retrieval_p50_ms": round(self.p50_ms, 1),
        }
