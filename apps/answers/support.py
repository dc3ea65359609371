"""Whether the evidence can answer the question: "Not found in your documents" instead of an invented answer.

Two checks, both cheap and both calibrated on questions asked against collections that do not hold
their answers (``make bench-not-found``; tuned on the HotpotQA and MuSiQue samples, validated on
2WikiMultihopQA dev300; docs/answering.md):

- before generation, on the retrieval (``evidence_measure``): ``similarity``, the best rerank score
  of the sources (the text embedder's cosine with the question in the offline profile), and
  ``coverage``, the share of the question's content words (weighted by length, so names count more
  than "born") that occur in the sources' text. A question about a topic the collections do not
  hold scores low on one or both; it is not sent to the generator at all. The thresholds depend on
  how the question reads the sources (``Evidence.reading``): the same way (the HotpotQA/MuSiQue fit),
  Chinese words over Chinese text, or across scripts either way (an English question of Chinese
  text: no word can be looked for, the similarity decides alone); the last three are fitted on XQuAD
  (``make bench-not-found BENCH_ARGS=--languages``).
- after generation, on the short answer: the generator's own "Not found in your documents." (it
  may write it unasked, ``says_not_found``), an empty answer, or ``answer_support``, the share of the
  answer's own words (not the question's) that occur in the sources the prompt showed. An answer
  made of words no source contains ("106.3 FM" from passages about a band) is replaced. A yes or
  no is checked only against the question's form: fine for "Is ...?", unsupported for "Which ...?".

The sources stay on the page either way: the closest evidence is what the user checks next.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from apps.answers.answer_text import short_answer
from apps.answers.prompt import STOPWORDS
from apps.answers.types import Source
from apps.core.language import has_cjk, same_script, words, written_in_cjk

WORD = re.compile(r"\w+", re.UNICODE)
YES_NO = frozenset({"yes", "no"})
SAID, UNSUPPORTED_WORDS = "said", "unsupported"  # answer_refusal's reasons
STEM = 5  # characters compared: "published" meets "publishes", "Germany" meets "German"


# How a question reads its sources (``Evidence.reading``): in the same script (and not Chinese), in
# Chinese over Chinese text, or across scripts: a question in another script over Chinese text, or a
# Chinese question over text in another script (the multilingual space scores the two differently:
# unrelated English passages stay close to a Chinese question).
SAME, CJK, TO_CJK, FROM_CJK = "same", "cjk", "to-cjk", "from-cjk"
READINGS = (SAME, CJK, TO_CJK, FROM_CJK)


@dataclass(frozen=True)
class Thresholds:
    min_similarity: float  # best source's rerank score below this: not found
    min_coverage: float  # share of the question's words in the sources below this: not found
    # similarity + coverage_weight * coverage below this: not found (0: no such check). One signal may make
    # up for the other: a question worded unlike its passage (similarity 0.40) whose words are all there.
    min_evidence: float = 0.0
    coverage_weight: float = 0.0


@dataclass(frozen=True)
class EvidenceParams:
    min_similarity: float  # best source's rerank score below this: not found
    min_coverage: float  # share of the question's words in the sources below this: not found
    min_answer_support: float  # share of the short answer's words in the shown sources below this: not found
    readings: Mapping[str, Thresholds] = field(default_factory=dict)  # other thresholds per reading
    min_evidence: float = 0.0  # the same-script reading's combined threshold (Thresholds.min_evidence)
    coverage_weight: float = 0.0

    def thresholds(self, reading: str) -> Thresholds:
        return self.readings.get(reading) or Thresholds(
            self.min_similarity, self.min_coverage, self.min_evidence, self.coverage_weight
        )


@dataclass(frozen=True)
class Evidence:
    similarity: float
    coverage: float
    reading: str = SAME

    def as_dict(self) -> dict[str, float]:
        return {"similarity": round(self.similarity, 4), "coverage": round(self.coverage, 4)}


def _words(text: str) -> list[str]:
    return [word for word in words(text) if word not in STOPWORDS and (len(word) > 1 or word.isdigit())]


def _stems(words: Iterable[str]) -> set[str]:
    return {word[:STEM] for word in words}


def word_coverage(words: Sequence[str], text: str) -> float:
    """The share of ``words`` (each weighted by its length, a stand-in for how rare it is) whose stem
    occurs in ``text``; 1.0 for no words."""
    if not words:
        return 1.0
    present = _stems(_words(text))
    total = sum(len(word) for word in words)
    return sum(len(word) for word in words if word[:STEM] in present) / total


def evidence_measure(question: str, sources: Sequence[Source]) -> Evidence:
    """The retrieval's two signals for ``question`` over ``sources`` (all of each source's text); the
    coverage is 1.0 when the question and the sources are in different scripts (``same_script``: an
    English question's words cannot be looked for in Chinese text): the similarity decides alone then."""
    chunks = [source for source in sources if source.kind != "image"]
    similarity = max((source.rerank_score for source in sources), default=0.0)
    text = "\n".join(source.text for source in chunks)
    chinese = written_in_cjk(question)
    if chunks and not same_script(question, text):
        return Evidence(similarity=similarity, coverage=1.0, reading=FROM_CJK if chinese else TO_CJK)
    reading = CJK if chinese else SAME
    return Evidence(similarity=similarity, coverage=word_coverage(_words(question), text), reading=reading)


def evidence_sufficient(evidence: Evidence, params: EvidenceParams) -> bool:
    return thresholds_met(evidence, params.thresholds(evidence.reading))


def thresholds_met(evidence: Evidence, thresholds: Thresholds) -> bool:
    return (
        evidence.similarity >= thresholds.min_similarity
        and evidence.coverage >= thresholds.min_coverage
        and evidence.similarity + thresholds.coverage_weight * evidence.coverage >= thresholds.min_evidence
    )


def prompt_sources_text(user: str) -> str:
    """What the prompt's user message showed of the sources (labels and excerpts), the question left out."""
    return user.rsplit("\n\nQuestion:", 1)[0]


YES_NO_QUESTION = re.compile(
    r"^\s*(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|shall|may|might)\b", re.IGNORECASE
)


def yes_no_question(question: str) -> bool:
    """Whether ``question`` asks for a yes or a no ("Is ...?", "Did ...?")."""
    return bool(YES_NO_QUESTION.match(question))


def avoid_first(question: str) -> tuple[str, ...]:
    """The words an answer to ``question`` may not begin with: "Yes" and "No" unless it is a yes/no
    question (small models answer "Yes" to "Whom ...?" when their sources leave them unsure)."""
    return () if yes_no_question(question) else ("Yes", "No")


def answer_support(short: str, shown: str, question: str) -> float:
    """The share of the short answer's own content words (those the question does not already say)
    found in ``shown`` (``prompt_sources_text``); 1.0 when there is nothing to check (no such word,
    or a yes/no answer to a yes/no question, which no source spells out), 0.0 for a yes/no answer
    to any other question ("No" to "Which radio station ...?" says nothing)."""
    said = WORD.findall(short.lower())
    if said and set(said) <= YES_NO:
        return 1.0 if yes_no_question(question) else 0.0
    asked = _stems(_words(question))
    cjk_shown = written_in_cjk(shown)
    # Only words written as the sources are can be looked for there ("308" and 卡万·肖特 in Chinese
    # sources, not an English answer's words).
    own = [
        word for word in _words(short) if word[:STEM] not in asked and (word.isdigit() or has_cjk(word) == cjk_shown)
    ]
    return word_coverage(own, shown) if own else 1.0


def says_not_found(short: str) -> bool:
    """Whether the generator itself answered that the sources do not say ("Not found …", unasked)."""
    start = short.strip().lower()
    return start.startswith(("not found", "未找到", "在你的文档中未找到", "在您的文档中未找到"))


def answer_refusal(generated: str, *, shown: str, question: str, min_support: float) -> str:
    """Why a generated (cleaned) text is no answer: ``SAID`` (empty, or the generator's own "not found"),
    ``UNSUPPORTED_WORDS`` (its short answer's support below ``min_support``), or "" for an answer."""
    short = short_answer(generated)
    if not short or says_not_found(short):
        return SAID
    return UNSUPPORTED_WORDS if answer_support(short, shown, question) < min_support else ""
