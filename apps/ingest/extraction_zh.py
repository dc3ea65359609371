"""Entities of Chinese text: rjieba's part-of-speech tags for names, not English spaCy.

No Chinese named-entity model ships its weights in a package this project can install (spaCy's
zh pipelines, HanLP 2, Stanza, LTP and GLiNER all download theirs), so names come from jieba's
dictionary and HMM as compiled into the ``rjieba`` wheel: words tagged ``nr``/``nrfg``/``nrt``
(people), ``ns`` (places) and ``nt`` (organisations). Sentences are the chunker's (it ends them
at Chinese full stops, question and exclamation marks too). Relations are co-occurrence within a
sentence, without a predicate: the dependency patterns of ``SpacyExtractor`` need an English parse.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence

from apps.core.language import chinese_names, written_in_cjk
from apps.graph.identity import entity_key, normalise_entity_name
from apps.ingest.chunking import split_sentences
from apps.ingest.types import Extraction, Mention, Relation


def chinese_mentions(text: str) -> list[Mention]:
    """The names in ``text`` as mentions with their identity keys."""
    return [
        Mention(start, end, name, label, entity_key(name, label))
        for start, end, name, label in chinese_names(text)
        if normalise_entity_name(name)
    ]


def chinese_extract(text: str, *, max_mentions_per_sentence: int) -> Extraction:
    """``EntityExtractor.extract`` for one Chinese text."""
    if not text.strip():
        return Extraction()
    sentences = tuple(split_sentences(text))
    mentions = chinese_mentions(text)
    starts = [start for start, _ in sentences]
    by_sentence: dict[int, list[int]] = {}
    for index, mention in enumerate(mentions):
        sentence = max(bisect.bisect_right(starts, mention.start) - 1, 0)
        by_sentence.setdefault(sentence, []).append(index)
    relations = [
        Relation(source, target, None, sentence)
        for sentence, members in by_sentence.items()
        for source, target in itertools.combinations(members[:max_mentions_per_sentence], 2)
        if mentions[source].key != mentions[target].key
    ]
    return Extraction(mentions=tuple(mentions), relations=tuple(relations), sentences=sentences)


def chinese_texts(texts: Sequence[str]) -> list[bool]:
    """Which of ``texts`` are written mostly in Chinese characters (``chinese_extract`` takes them)."""
    return [written_in_cjk(text) for text in texts]
