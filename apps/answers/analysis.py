"""Stage 1, query analysis: language, subword tokens, Shannon entropy, entity names.

The tokens are the generator's subword tokens (the same tokenizer that counts the context
budget). The entropy is that of the question's own token distribution,
``H = -sum(p_t * log2 p_t)`` with ``p_t`` the share of token ``t`` among the question's
tokens: it grows with the number of distinct pieces a question carries, and sets how many
sources the answer gets (``selection.dynamic_k``). Entity names come from spaCy's NER
(English model, NER only) and link the question to graph entities.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from apps.answers.types import QueryAnalysis
from apps.core.language import chinese_names, detect_language, written_in_cjk

if TYPE_CHECKING:
    from spacy.language import Language

# Entity types that name things a question can be about; numbers and dates link too much.
QUESTION_ENTITY_LABELS = frozenset(
    {"PERSON", "ORG", "GPE", "LOC", "FAC", "NORP", "WORK_OF_ART", "PRODUCT", "EVENT", "LAW", "LANGUAGE"}
)
_NER_EXCLUDE = ("tagger", "parser", "attribute_ruler", "lemmatizer", "senter")
_ner_lock = threading.Lock()

Tokenize = Callable[[str], Sequence[str]]


def shannon_entropy(tokens: Sequence[str]) -> float:
    """Entropy in bits of the tokens' frequency distribution (0 for none or one distinct token)."""
    if not tokens:
        return 0.0
    total = len(tokens)
    return max(0.0, -sum(count / total * math.log2(count / total) for count in Counter(tokens).values()))


@functools.cache
def _ner_pipeline(model: str) -> Language:
    import spacy

    return spacy.load(model, exclude=_NER_EXCLUDE)


def question_entities(text: str, *, model: str) -> tuple[str, ...]:
    """Names of the entities spaCy finds in the question (rjieba's tagged names in a Chinese one:
    apps/core/language.py), in order, without repeats."""
    if written_in_cjk(text):
        return tuple(dict.fromkeys(name for _start, _end, name, _label in chinese_names(text)))
    nlp = _ner_pipeline(model)
    with _ner_lock:  # one pipeline shared by the web server's threads
        doc = nlp(text)
    names = (ent.text.strip() for ent in doc.ents if ent.label_ in QUESTION_ENTITY_LABELS)
    return tuple(dict.fromkeys(name for name in names if name))


@functools.cache
def _entity_threads() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="question-entities")


class PendingEntities:
    """The question's entity names, found in a helper thread while the question is embedded and its
    seeds searched (spaCy's NER, about 7 ms, is the slowest part of analysis and nothing before the
    graph expansion needs its result)."""

    def __init__(self, text: str, *, model: str | None) -> None:
        self._future: Future[tuple[str, ...]] | None = None
        if model:
            self._future = _entity_threads().submit(question_entities, text, model=model)

    def result(self) -> tuple[str, ...]:
        """The names (waiting for them if need be); an extraction error is raised here."""
        return () if self._future is None else self._future.result()


def query_analyse(*, question: str, tokenize: Tokenize, ner_model: str | None) -> QueryAnalysis:
    """Stage 1 for one question (``ner_model`` None skips entity names: the pipeline finds them with
    ``PendingEntities`` and adds them once found)."""
    tokens = tuple(tokenize(question))
    entities = question_entities(question, model=ner_model) if ner_model else ()
    return QueryAnalysis(
        text=question,
        language=detect_language(question),
        tokens=tokens,
        entropy=round(shannon_entropy(tokens), 4),
        entities=entities,
    )
