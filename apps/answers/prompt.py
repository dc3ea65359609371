"""Stage 6, prompt assembly: the question and the sentences of its sources that matter, numbered.

A small model answers better from a short prompt. Each source contributes only its best
sentences (``excerpt_select``: the sentences sharing the rarest words with the question, and
their neighbours, in text order) from the sentence offsets ingestion stored; a title line
(a first "sentence" without final punctuation) labels the source instead of counting as
evidence. The answer is asked for as a short answer on the first line, then one sentence of
support, and worked examples in the system message show that shape in the chat format the model was
trained on: a question over two sources and a yes/no question. Whether the sources answer at all is
decided outside the model (``apps.answers.support``): asked to say "not found" itself, the 1.5B
refused answerable questions too often.
What each source showed is kept (``Source.shown``) so attribution finds those sentences in the
prompt and nothing else.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from apps.answers.types import Prompt, Source
from apps.core.language import detect_language, words, written_in_cjk

NOT_FOUND = "Not found in your documents."  # the answer when the evidence does not support one
SYSTEM = (
    "You answer questions from the numbered sources only. On the first line write the short answer alone: "
    "a name, a date, a number or a few words (yes or no for a yes/no question), never a whole sentence. "
    "On the second line write one sentence from the sources that supports it.\n\n"
    "Examples.\n"
    "Sources:\n\n"
    "[1] Lake Orva\n"
    "Lake Orva lies in the northern hills. The river Tamsin flows out of it.\n\n"
    "[2] Tamsin\n"
    "The Tamsin is a river 212 km long. It reaches the sea at the port of Vell.\n\n"
    "Question: At which port does the river that flows out of Lake Orva reach the sea?\n"
    "Vell\n"
    "The Tamsin, which flows out of Lake Orva, reaches the sea at the port of Vell.\n\n"
    "Question: Is the Tamsin longer than 300 km?\n"
    "No\n"
    "The Tamsin is a river 212 km long."
)
# The same instructions and examples in Chinese, for a question asked in Chinese: the answer is then
# written in Chinese, and a small model follows instructions in the question's language more closely.
SYSTEM_ZH = (
    "你只根据编号的资料回答问题。第一行只写简短的答案：一个名字、日期、数字或几个词（是非题写“是”或“否”），"  # noqa: RUF001
    "不要写完整的句子。第二行写资料中支持这个答案的一句话。\n\n"
    "示例。\n"
    "Sources:\n\n"
    "[1] 奥尔瓦湖\n"
    "奥尔瓦湖位于北部山区。塔姆辛河从湖中流出。\n\n"
    "[2] 塔姆辛河\n"
    "塔姆辛河全长212公里。它在韦尔港入海。\n\n"
    "Question: 从奥尔瓦湖流出的河在哪个港口入海？\n"  # noqa: RUF001
    "韦尔港\n"
    "塔姆辛河在韦尔港入海。\n\n"
    "Question: 塔姆辛河的长度超过300公里吗？\n"  # noqa: RUF001
    "否\n"
    "塔姆辛河全长212公里。"
)
NOT_FOUND_ZH = "在你的文档中未找到。"
NO_SOURCES = "(no sources were found)"
GAP = " … "
_STOPWORDS = (
    "a an the of in on at to for from by with and or but is are was were be been being what which who whom whose "
    "when where why how that this these those it its as than then did do does done has have had not no yes if "
    "into about after before between both either same also there their they he she his her him we you your our "
    "i me my one two first last many much more most other such can could would should will may might"
)
# Chinese question and function words as rjieba cuts them (single characters never count as words).
_CHINESE_STOPWORDS = (
    "什么 多少 哪个 哪些 哪里 哪儿 哪一 哪位 怎么 怎样 如何 为什么 为何 何时 多久 几个 是否 这个 那个 一个 "
    "时候 以及 或者 并且 而且 但是 因为 所以 如果 可以 没有 已经 他们 我们 你们 它们 这些 那些 之后 之前 其中"
)
STOPWORDS = frozenset(_STOPWORDS.split()) | frozenset(_CHINESE_STOPWORDS.split())


@dataclass(frozen=True)
class ExcerptParams:
    """Which sentences of a source the prompt shows. The best sentence with its two neighbours (1/1/3)
    answered better than the two best with theirs (2/1/4, before) on the tuning sets, from a prompt about a
    sixth shorter (make bench-answer-quality, 40 HotpotQA and 40 MuSiQue questions; docs/answering.md)."""

    best: int = 1  # sentences of a source chosen by their words
    neighbours: int = 1  # sentences kept on each side of a chosen one
    most: int = 3  # sentences of one source at most


WHOLE = ExcerptParams(best=10_000, neighbours=10_000, most=10_000)  # every sentence of every source


def _terms(text: str) -> list[str]:
    """Lower-case content words, cut to 6 characters (a crude stem: "published" meets "publishes")."""
    return [word[:6] for word in words(text) if word not in STOPWORDS and len(word) > 1]


SENTENCE_ENDS = ".!?:;\"'”)。！？；：，」』）"  # noqa: RUF001 - a title ends with none of them
TITLE_WORDS = 12  # a title line has at most this many words (Chinese ones as rjieba cuts them)


def _title_line(source: Source) -> str:
    """The source's title line when its first sentence is one (short, no final punctuation), else ""."""
    if source.kind != "chunk" or len(source.sentences) < 2:
        return ""
    start, end = source.sentences[0]
    first = source.text[start:end].strip()
    if not first or first[-1] in SENTENCE_ENDS or len(words(first)) > TITLE_WORDS:
        return ""
    return first


def source_label(source: Source) -> str:
    """What a source is called in the prompt: its title line, else its document's name without folder
    and extension, on one line (a name cannot fake another block)."""
    label = _title_line(source) or PurePosixPath(source.document).stem or source.document
    return " ".join(label.split()) or f"source {source.number}"


def _sentence_scores(texts: Sequence[str], question: str, idf: dict[str, float]) -> list[float]:
    wanted = set(_terms(question))
    return [sum(idf.get(term, 0.0) for term in set(_terms(text)) & wanted) for text in texts]


def excerpt_select(
    sentences: Sequence[str], *, question: str, idf: dict[str, float], params: ExcerptParams
) -> tuple[int, ...]:
    """Indices of the sentences to show, in text order: the ``best`` sentences by the weight of the
    question's words they contain, each with ``neighbours`` on either side, at most ``most``; the
    first sentence when none shares a word (it usually says what the source is about)."""
    if len(sentences) <= 1:
        return tuple(range(len(sentences)))
    scores = _sentence_scores(sentences, question, idf)
    ranked = sorted((i for i in range(len(sentences)) if scores[i] > 0), key=lambda i: (-scores[i], i))
    chosen: list[int] = []
    for index in ranked[: params.best] or [0]:
        around = range(max(0, index - params.neighbours), min(len(sentences), index + params.neighbours + 1))
        for position in sorted(around, key=lambda p: (abs(p - index), p)):
            if position not in chosen and len(chosen) < params.most:
                chosen.append(position)
    return tuple(sorted(chosen))


def _evidence(source: Source) -> list[tuple[int, str]]:
    """(sentence index, text) of a source's evidence sentences (its title line left out)."""
    if source.kind != "chunk" or not source.sentences:
        return []
    skip = 1 if _title_line(source) else 0
    return [(i, source.text[a:b].strip()) for i, (a, b) in enumerate(source.sentences) if i >= skip]


def _idf(documents: Sequence[Sequence[str]]) -> dict[str, float]:
    """Inverse document frequency of each term over all sentences of all sources."""
    frequency: Counter[str] = Counter()
    total = 0
    for sentences in documents:
        for text in sentences:
            frequency.update(set(_terms(text)))
            total += 1
    return {term: math.log(1 + total / count) for term, count in frequency.items()}


def source_excerpt(source: Source) -> str:
    """The text a source shows in the prompt: its shown sentences (a gap mark between sentences that
    do not follow each other), or all of its text when it has no sentences."""
    if source.shown is None:
        return source.text.strip()
    pieces: list[str] = []
    previous: int | None = None
    for index in source.shown:
        start, end = source.sentences[index]
        if previous is not None:
            pieces.append(GAP if index > previous + 1 else " ")
        pieces.append(source.text[start:end].strip())
        previous = index
    return "".join(pieces)


def source_block(source: Source) -> str:
    return f"[{source.number}] {source_label(source)}\n{source_excerpt(source)}"


def question_chinese(question: str) -> bool:
    """Whether the question is written in Chinese: then the prompt and "not found" are in Chinese."""
    return written_in_cjk(question) and detect_language(question) == "zh"


def system_message(question: str) -> str:
    return SYSTEM_ZH if question_chinese(question) else SYSTEM


def not_found_text(question: str) -> str:
    """ "Not found in your documents." in the question's language (English or Chinese)."""
    return NOT_FOUND_ZH if question_chinese(question) else NOT_FOUND


def sources_excerpt(*, question: str, sources: Sequence[Source], params: ExcerptParams | None = None) -> list[Source]:
    """The sources with ``shown`` set: for each chunk, the sentences that matter to ``question``."""
    params = params or ExcerptParams()
    evidence = [_evidence(source) for source in sources]
    idf = _idf([[text for _, text in sentences] for sentences in evidence])
    chosen = []
    for source, sentences in zip(sources, evidence, strict=True):
        if not sentences:
            chosen.append(source)
            continue
        picked = excerpt_select([text for _, text in sentences], question=question, idf=idf, params=params)
        chosen.append(replace(source, shown=tuple(sentences[i][0] for i in picked)))
    return chosen


def user_message(*, question: str, sources: Sequence[Source]) -> str:
    """The user message: every source's block under the header, then the question."""
    blocks = "\n\n".join(source_block(source) for source in sources) or NO_SOURCES
    return f"Sources:\n\n{blocks}\n\nQuestion: {' '.join(question.split())}"


def _fitting(
    shown: Sequence[Source], *, question: str, count_tokens: Callable[[str], int], budget: int
) -> list[Source]:
    """The sources, in order, whose blocks fit in what ``budget`` leaves besides the header and the
    question (a block that does not fit is left out whole and the next one tried), numbered from 1."""
    left = budget - count_tokens(user_message(question=question, sources=[]))
    kept = []
    for source in shown:
        tokens = count_tokens(source_block(source)) + 1  # and the blank line before it
        if tokens <= left:
            kept.append(source)
            left -= tokens
    return [replace(source, number=number) for number, source in enumerate(kept, start=1)]


def prompt_assemble(
    *,
    question: str,
    sources: Sequence[Source],
    count_tokens: Callable[[str], int],
    params: ExcerptParams | None = None,
    budget: int | None = None,
) -> Prompt:
    """The user message lists every source's excerpt under its label, then the question. With a
    ``budget`` the system and user messages take at most that many tokens together: when they would
    take more, the sources whose blocks do not fit are left out whole and the rest numbered again from
    1 (``Prompt.dropped`` counts the left out). The message is tokenized once when it fits, which is
    nearly always; block by block only when it does not."""
    shown = sources_excerpt(question=question, sources=sources, params=params)
    kept = list(shown)
    system_text = system_message(question)
    system = count_tokens(system_text)
    user = user_message(question=question, sources=kept)
    tokens = count_tokens(user)
    if budget is not None and system + tokens > budget:
        kept = _fitting(shown, question=question, count_tokens=count_tokens, budget=budget - system)
        user = user_message(question=question, sources=kept)
        tokens = count_tokens(user)
        while kept and system + tokens > budget:  # a block counted alone may take a token more in the whole
            kept.pop()
            user = user_message(question=question, sources=kept)
            tokens = count_tokens(user)
    return Prompt(
        system=system_text, user=user, sources=tuple(kept), tokens=system + tokens, dropped=len(shown) - len(kept)
    )
