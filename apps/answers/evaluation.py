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

import hashlib
import json
import re
import string
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from apps.ingest import corpora

DATASETS = ("hotpotqa", "musique", "2wiki")
PUNCTUATION = frozenset(string.punctuation) | frozenset("，。！？；：、“”‘’（）《》【】「」『』…—·")  # noqa: RUF001
# XQuAD's paragraphs and questions, the same 240 paragraphs and 1,190 questions in each language:
# "xquad-Q-P" asks the questions written in language Q of the paragraphs written in language P.
XQUAD_DATASETS = ("xquad-zh-zh", "xquad-en-zh", "xquad-zh-en", "xquad-en-en")


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


def _xquad_languages(dataset: str) -> tuple[str, str]:
    """(question language, paragraph language) of an ``XQUAD_DATASETS`` name."""
    _, question, paragraph = dataset.split("-")
    return question, paragraph


def _xquad(data_dir: Path, dataset: str) -> Iterator[EvalQuestion]:
    """Each question (in its language) with its paragraph (in the other) as the one supporting passage;
    the answer in both languages counts (asked in English of Chinese text, "308" or the English words)."""
    asked, written = _xquad_languages(dataset)
    names = [name for name, _ in corpora.xquad_paragraphs(data_dir, written)]
    squads = {language: json.loads((data_dir / f"multilingual/xquad/xquad.{language}.json").read_text())
              for language in {asked, written}}  # fmt: skip
    paragraphs = zip(
        (p for a in squads[asked]["data"] for p in a["paragraphs"]),
        (p for a in squads[written]["data"] for p in a["paragraphs"]),
        strict=True,
    )
    for number, (question_paragraph, passage) in enumerate(paragraphs):
        gold = ((names[number].removesuffix(".txt").split("/")[-1], passage["context"]),)
        for qa, same in zip(question_paragraph["qas"], passage["qas"], strict=True):
            answers = tuple(dict.fromkeys(answer["text"] for answer in [*qa["answers"], *same["answers"]]))
            yield EvalQuestion(qa["id"], qa["question"], answers, frozenset({names[number]}), gold)


def eval_questions(dataset: str, data_dir: Path) -> list[EvalQuestion]:
    """The dataset's questions with their supporting passages' document paths."""
    if dataset in XQUAD_DATASETS:  # in an order of their ids' hashes: the first N span every article
        return sorted(_xquad(data_dir, dataset), key=lambda q: hashlib.sha256(q.id.encode()).hexdigest())
    if dataset not in DATASETS:
        raise ValueError(f"unknown dataset {dataset!r} (choose from {', '.join((*DATASETS, *XQUAD_DATASETS))})")
    readers = {"hotpotqa": _hotpotqa, "musique": _musique, "2wiki": _twowiki}
    return [q for q in readers[dataset](data_dir) if q.supporting]


def corpus_name(dataset: str) -> str:
    """The corpus a dataset's questions are asked of: its own, or XQuAD's paragraphs in one language
    (shared by the datasets that ask them in different languages)."""
    return f"xquad-{_xquad_languages(dataset)[1]}" if dataset in XQUAD_DATASETS else dataset


def eval_corpus(dataset: str, data_dir: Path) -> list[tuple[str, bytes]]:
    if dataset in XQUAD_DATASETS:
        return list(corpora.xquad_paragraphs(data_dir, _xquad_languages(dataset)[1]))
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


def all_supporting_at(ranked_documents: Sequence[str], supporting: frozenset[str], k: int) -> bool:
    """Whether every supporting passage is among the first ``k`` distinct documents (a bridge question
    needs both of its hops in the prompt, not one)."""
    return bool(supporting) and supporting <= set(distinct_documents(ranked_documents)[:k])


YES_NO = frozenset({"yes", "no"})


def answer_bearing(text: str, answers: Sequence[str]) -> bool:
    """Whether ``text`` contains one of the answers as whole words (after SQuAD's normalisation); a
    yes or no answer is borne by no passage."""
    words = f" {normalise_answer(text)} "
    return any(
        (found := normalise_answer(answer)) and found not in YES_NO and f" {found} " in words for answer in answers
    )


def supporting_texts(question: EvalQuestion) -> list[str]:
    """The supporting passages' texts (``gold`` lists them first, then one that does not support)."""
    return [text for _title, text in question.gold[: len(question.supporting)]]


_CJK_CHAR = re.compile(r"([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])")


def normalise_answer(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation (full-width too), no articles, single
    spaces; each Chinese character a word of its own (MLQA's "mixed segmentation", so that F1 is
    counted by characters in Chinese and by words elsewhere)."""
    text = "".join(char for char in text.lower() if char not in PUNCTUATION)
    text = _CJK_CHAR.sub(r" \1 ", text)
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
    all_supporting_at_5: float = 0.0  # share of questions with every supporting passage in the top 5
    answer_at_1: float | None = None  # share with an answer-bearing supporting passage first (of those that have one)
    pool_recall: float = 0.0  # recall over every reranked candidate: what a better ranking could reach
    pool_size: float = 0.0  # median distinct documents among them
    stage_p50_ms: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "questions": self.questions,
            **{f"recall@{k}": round(value, 4) for k, value in sorted(self.recall.items())},
            "all_supporting@5": round(self.all_supporting_at_5, 4),
            "answer_at_1": None if self.answer_at_1 is None else round(self.answer_at_1, 4),
            "pool_recall": round(self.pool_recall, 4),
            "pool_size": self.pool_size,
            "exact_match": None if self.exact_match is None else round(self.exact_match, 4),
            "f1": None if self.f1 is None else round(self.f1, 4),
            "retrieval_p50_ms": round(self.p50_ms, 1),
            "stage_p50_ms": {stage: round(ms, 2) for stage, ms in self.stage_p50_ms.items()},
        }
