"""Stage 4's learned ranker: a small model over each candidate's question, passage and path features.

The cosine of stored vectors says how close a passage is to the question; it does not say that the
passage is the second hop of a bridge question (the page of the author the first passage names),
nor that the pair of passages covers the question together. ``candidate_features`` describes each
candidate of the reranked pool by what the pipeline already knows about it, in numbers comparable
across questions and collections (relative to the pool's best, shares, flags):

- relevance: its cosine, its BM25, their distance from the pool's best, its hand-weighted rank;
- the graph: whether it is a seed, its support score, its shortest path, how many paths reach it,
  whether a question entity leads to it (a path's score carries the entity's specificity in its
  collection: the rarer the entity, the stronger the path);
- the bridge, scored per pair with each of the best few candidates (as Beam Retrieval scores pairs):
  the strongest path from one of them, whether one of them names its title, and how much of the
  question the pair covers together beyond what the other covers alone;
- its title: how much of it the question names.

``LearnedRanker`` scores those features with the model ``make train-reranker`` fits
(``benchmarks/train_reranker.py``: a two-layer network trained listwise on the supporting passages of
the HotpotQA and MuSiQue tuning questions, exported as ONNX, ``apps/answers/data/``).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from apps.answers.prompt import STOPWORDS
from apps.answers.rerank import BridgeParams, bridge_from
from apps.answers.support import STEM
from apps.answers.types import Candidate, GraphPath
from apps.core.language import has_cjk, words
from apps.ingest.graph_build import title_name

logger = logging.getLogger(__name__)

MODEL_PATH = Path(__file__).resolve().parent / "data" / "reranker.onnx"
PARTNERS = 3  # each candidate is paired with the best this-many others (by the hand-weighted score)
MIN_TITLE = 3  # a title shorter than this many characters is not looked for in other passages

FEATURES = (
    "cosine",
    "cosine_gap",
    "score_gap",
    "rank",
    "lexical",
    "lexical_found",
    "seed",
    "support",
    "hops",
    "paths",
    "from_question_entity",
    "bridge_path",
    "chosen_bridge",
    "named_by_partner",
    "pair_coverage",
    "pair_gain",
    "coverage",
    "title_in_question",
    "partner_cosine",
)


NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
WORD = re.compile(r"\w+", re.UNICODE)


def _spaced(text: str) -> str:
    """``text`` lower-cased, every run of non-word characters one space, with a space before the first word."""
    return " " + NON_WORD.sub(" ", text.casefold())


@functools.lru_cache(maxsize=16384)
def text_stems(text: str) -> frozenset[str]:
    """The stems of ``text``'s words (CJK text: ``words``' segmentation), remembered for the last
    texts: the same passages come back for question after question."""
    folded = text.casefold()
    return frozenset(w[:STEM] for w in (words(folded) if has_cjk(folded) else WORD.findall(folded)))


@dataclass(frozen=True)
class _Title:
    spaced: str  # the title ``_spaced``, to be looked for in other passages
    stems: tuple[str, ...]  # its content words' stems

    @classmethod
    @functools.lru_cache(maxsize=16384)
    def of(cls, document: str) -> _Title:
        """The document's title when it is a name (``title_name``: capitalised, not a sentence, not a
        file stem like "report_2023"), else none: "lanterns.txt" names nothing other passages could name."""
        title = title_name(title_of(document), document)
        stems = tuple(w[:STEM] for w in words(title.casefold()) if w not in STOPWORDS and len(w) > 1)
        return cls(_spaced(title).rstrip() if title else "", stems)


@dataclass(frozen=True)
class _Question:
    """The question's content words: what a text covers of them is a bit mask over them."""

    stems: tuple[str, ...]
    weights: tuple[int, ...]  # each word's length, a stand-in for how rare it is
    shares: dict[int, float] = field(default_factory=dict)  # coverage by mask, as they are asked for

    @classmethod
    def of(cls, question: str) -> _Question:
        found = dict.fromkeys(w for w in words(question.casefold()) if w not in STOPWORDS and len(w) > 1)
        return cls(tuple(word[:STEM] for word in found), tuple(len(word) for word in found))

    def mask(self, text: str) -> int:
        """The question's words whose stem is one of ``text``'s words' stems."""
        found = text_stems(text)
        return sum(1 << i for i, stem in enumerate(self.stems) if stem in found)

    def coverage(self, mask: int) -> float:
        """The share of the question's words (weighted by length) in ``mask``; 0 for no words."""
        share = self.shares.get(mask)
        if share is None:
            total = sum(self.weights)
            share = sum(w for i, w in enumerate(self.weights) if mask >> i & 1) / total if total else 0.0
            self.shares[mask] = share
        return share


PARENTHETICAL = re.compile(r"\s*\([^)]*\)\s*$")


def title_of(document: str) -> str:
    """The name a document's title gives (trailing parentheticals off: "Charmed (season 2) (2)" ->
    "Charmed"); the document name without a folder and a file extension."""
    name = document.rsplit("/", 1)[-1]
    stem, dot, extension = name.rpartition(".")
    if dot and extension.isalnum() and len(extension) <= 4:
        name = stem
    previous = None
    while previous != name:
        previous, name = name, PARENTHETICAL.sub("", name)
    return name.strip()


def from_question_entity(path: GraphPath) -> bool:
    """Whether the path starts at an entity the question names (not at a seed unit): entity -> unit,
    or entity -> related entity -> unit (``apps.answers.expansion.group_paths``)."""
    relationships = path.relationships
    return relationships == ("MENTIONS",) or (len(relationships) == 2 and relationships[0] != "MENTIONS")


@dataclass(frozen=True)
class _Pool:
    question: _Question
    best_cosine: float
    best_score: float
    best_lexical: float
    partners: list[Candidate]
    masks: dict[str, int]  # the question's words each candidate's text holds, by unit id
    starts: dict[str, dict[str, float]]  # each candidate's best path score from each start node, by unit id
    texts: dict[str, str]  # each partner's text, ``_spaced``


def _pool(question: str, candidates: Sequence[Candidate]) -> _Pool:
    by_score = sorted(candidates, key=lambda c: (-c.score, c.node_id))
    partners = by_score[:PARTNERS]
    asked = _Question.of(question)
    return _Pool(
        question=asked,
        best_cosine=max((c.rerank_score or 0.0 for c in candidates), default=0.0),
        best_score=by_score[0].score if by_score else 0.0,
        best_lexical=max((c.lexical_score for c in candidates), default=0.0),
        partners=partners,
        masks={c.node_id: asked.mask(c.text) for c in candidates},
        starts={c.node_id: _path_starts(c) for c in candidates},
        texts={c.node_id: _spaced(c.text) for c in partners},
    )


def _path_starts(candidate: Candidate) -> dict[str, float]:
    """The best score of the candidate's paths (one hop or more) from each node they start at."""
    best: dict[str, float] = {}
    for path in candidate.paths:
        if path.relationships and path.score > best.get(path.nodes[0], -math.inf):
            best[path.nodes[0]] = path.score
    return best


def _title_in_question(title: _Title, pool: _Pool) -> float:
    """The share of the title's content words whose stem is one of the question's (0 for no words)."""
    return sum(stem in pool.question.stems for stem in title.stems) / len(title.stems) if title.stems else 0.0


def _pair_features(candidate: Candidate, title: _Title, pool: _Pool) -> tuple[float, float, float, float, float]:
    """(strongest path from a partner, partner cosine x whether a partner names its title, best
    coverage of the question by the candidate with one partner, that coverage beyond the partner's
    own, the cosine of its vector with the best partner's)."""
    path = named = pair = gain = 0.0
    for partner in pool.partners:
        if partner is candidate:
            continue
        cosine = partner.rerank_score or 0.0
        path = max(path, pool.starts[candidate.node_id].get(partner.node_id, 0.0))
        if len(title.spaced) > MIN_TITLE and title.spaced + " " in pool.texts[partner.node_id] + " ":
            named = max(named, cosine)
        alone = pool.question.coverage(pool.masks[partner.node_id])
        joint = pool.question.coverage(pool.masks[partner.node_id] | pool.masks[candidate.node_id])
        if joint > pair or (joint == pair and joint - alone > gain):
            pair, gain = joint, joint - alone
    best = next((p for p in pool.partners if p is not candidate), None)
    similar = 0.0
    if best is not None and best.vector is not None and candidate.vector is not None:
        similar = float(best.vector @ candidate.vector)
    return path, named, pair, gain, similar


def _chosen_bridges(pool: _Pool, candidates: Sequence[Candidate]) -> set[str]:
    """The unit each of the best ``BridgeParams.starts`` candidates leads to most strongly (``bridge_from``:
    what ``bridges_promote`` brings forward with the weighted order)."""
    params = BridgeParams()
    chosen = (bridge_from(start, candidates, params.path_weight) for start in pool.partners[: params.starts])
    return {bridge.node_id for bridge in chosen if bridge is not None}


def candidate_features(question: str, candidates: Sequence[Candidate]) -> npt.NDArray[np.float32]:
    """One row of ``FEATURES`` per candidate (in the order given), from their rerank (cosine), hand
    score, lexical and graph fields, texts, documents and vectors."""
    pool = _pool(question, candidates)
    bridges = _chosen_bridges(pool, candidates)
    rank = {c.node_id: position for position, c in enumerate(sorted(candidates, key=lambda c: (-c.score, c.node_id)))}
    rows = []
    for candidate in candidates:
        cosine = candidate.rerank_score or 0.0
        hops = [path.hops for path in candidate.paths if path.hops]
        title = _Title.of(candidate.document)
        bridge_path, named, pair, gain, similar = _pair_features(candidate, title, pool)
        rows.append(
            (
                cosine,
                cosine - pool.best_cosine,
                candidate.score - pool.best_score,
                math.log1p(rank[candidate.node_id]),
                candidate.lexical_score / pool.best_lexical if pool.best_lexical > 0 else 0.0,
                float(candidate.lexical_score > 0),
                float(candidate.seed_score > 0),
                candidate.support_score,
                min(hops, default=0) / 3,
                math.log1p(len(hops)),
                float(any(from_question_entity(path) for path in candidate.paths)),
                bridge_path,
                float(candidate.node_id in bridges),
                named,
                pair,
                gain,
                pool.question.coverage(pool.masks[candidate.node_id]),
                _title_in_question(title, pool),
                similar,
            )
        )
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), len(FEATURES))


class Ranker(Protocol):
    def scores(self, features: npt.NDArray[np.float32]) -> list[float]: ...


class LearnedRanker:
    """The trained model (ONNX) over ``candidate_features``: one score per candidate."""

    def __init__(self, path: Path = MODEL_PATH) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name

    def scores(self, features: npt.NDArray[np.float32]) -> list[float]:
        if not len(features):
            return []
        (out,) = self.session.run(None, {self.input: features})
        return [float(value) for value in np.asarray(out).reshape(-1)]


@functools.cache
def learned_ranker(path: str = str(MODEL_PATH)) -> LearnedRanker | None:
    """The shipped model, loaded once; None (the hand-weighted order stays, said once in the log) when
    its file is missing or was trained on other features than ``FEATURES`` (its provenance file,
    beside it, lists them)."""
    model = Path(path)
    provenance = model.with_suffix(".json")
    if not model.is_file() or not provenance.is_file():
        logger.warning("no learned ranker at %s: candidates keep the hand-weighted order", model)
        return None
    trained_on = json.loads(provenance.read_text()).get("features")
    if trained_on != list(FEATURES):
        logger.warning(
            "the learned ranker at %s was trained on other features (run make train-reranker): "
            "candidates keep the hand-weighted order",
            model,
        )
        return None
    return LearnedRanker(model)


def ranker_apply(question: str, ranked: list[Candidate], ranker: Ranker) -> list[Candidate]:
    """``ranked`` (hand-weighted, best first) reordered by the learned scores; each candidate's score
    becomes the logistic of its learned score (0 to 1, shown with the sources; the order is the
    network's); the features are kept on the candidates (``Candidate.features``)."""
    features = candidate_features(question, ranked)
    for candidate, row, score in zip(ranked, features, ranker.scores(features), strict=True):
        candidate.features = row
        candidate.score = 1.0 / (1.0 + math.exp(-min(max(score, -60.0), 60.0)))
    return sorted(ranked, key=lambda candidate: (-candidate.score, candidate.node_id))
