"""The typed values that pass between the answering stages.

Each stage takes and returns these (frozen where a later stage must not change them), so a
stage can be run, traced and evaluated on its own.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

KINDS = {"Chunk": "chunk", "Row": "row", "Image": "image"}
STAGES = ("analysis", "embed", "vector_search", "graph_expansion", "rerank", "selection", "assembly", "generation")


class AnswerError(Exception):
    """A failure the user is told about in plain words (``message``); ``stage`` names where it happened."""

    def __init__(self, message: str, *, stage: str, status: int = 503) -> None:
        super().__init__(message)
        self.message = message
        self.stage = stage
        self.status = status


@dataclass(frozen=True)
class QueryAnalysis:
    """Stage 1: the question's language, its subword tokens and their Shannon entropy (bits)."""

    text: str
    language: str
    tokens: tuple[str, ...]
    entropy: float
    entities: tuple[str, ...] = ()  # entity names found in the question
    linked: tuple[tuple[str, str], ...] = ()  # (entity id, name) of the graph entities the question names


@dataclass(frozen=True)
class Seed:
    """A unit that starts the graph expansion: a FAISS hit (``space`` text or clip) or a full-text
    hit (``space`` lexical). ``score`` is the unit's similarity to the question in that space (a
    lexical hit's is its stored text vector's cosine, so every seed is on one scale) and
    ``lexical`` its BM25 score over the best one of the question (0 when the full-text search
    did not find it)."""

    node_id: str
    label: str
    score: float
    space: str
    collection: str = ""  # the unit's collection, recorded so audit pages know what the answer touched
    lexical: float = 0.0


@dataclass(frozen=True)
class Seeds:
    """Stage 2: the query vectors and the nearest units in every space."""

    text_vector: npt.NDArray[np.float32]
    hits: tuple[Seed, ...]


@dataclass(frozen=True)
class GraphPath:
    """How the expansion reached a unit: node ids from the start (a seed unit or a question
    entity) to the unit, and the relationship types between them."""

    nodes: tuple[str, ...]
    relationships: tuple[str, ...]
    score: float

    @property
    def hops(self) -> int:
        return len(self.relationships)

    def as_dict(self) -> dict[str, Any]:
        return {"nodes": list(self.nodes), "relationships": list(self.relationships), "score": round(self.score, 6)}


@dataclass
class Candidate:
    """A chunk, row or image on its way through scoring (stages 3 to 5)."""

    node_id: str
    label: str
    seed_score: float = 0.0  # best FAISS similarity (0 when only the graph reached it)
    lexical_score: float = 0.0  # BM25 over the question's best (0 when the full-text search did not find it)
    graph_score: float = 0.0  # all paths, the seed's own similarity included (orders the shortlist)
    support_score: float = 0.0  # the expansion's paths only: what the graph adds beyond similarity
    paths: list[GraphPath] = field(default_factory=list)
    rerank_score: float | None = None
    score: float = 0.0
    document_id: str = ""
    document: str = ""
    collection: str = ""
    text: str = ""
    image_path: str = ""
    sentences: tuple[tuple[int, int], ...] = ()
    vector: npt.NDArray[np.float32] | None = None
    space: str = "text"  # the text space ``vector`` is in (its collection's: apps/vectors/spaces.py)
    features: npt.NDArray[np.float32] | None = None  # what the learned ranker scored (apps.answers.ranker)

    @property
    def kind(self) -> str:
        return KINDS[self.label]


@dataclass(frozen=True)
class Source:
    """Stage 5's output: one piece of evidence, numbered from 1 in the order given to the model."""

    number: int
    node_id: str
    kind: str
    document_id: str
    document: str
    collection: str
    text: str
    image_path: str
    score: float
    paths: tuple[GraphPath, ...]
    sentences: tuple[tuple[int, int], ...] = ()
    seed_score: float = 0.0
    rerank_score: float = 0.0
    support_score: float = 0.0
    shown: tuple[int, ...] | None = None  # the sentences the prompt showed (None: the whole text)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.node_id,
            "number": self.number,
            "kind": self.kind,
            "document": self.document,
            "document_id": self.document_id,
            "collection": self.collection,
            "text": self.text,
            **({"path": self.image_path} if self.kind == "image" else {}),
            "score": round(self.score, 6),
            "paths": [list(path.nodes) for path in self.paths],
            "path_details": [path.as_dict() for path in self.paths],
            "sentences": [list(span) for span in self.sentences],
            **({"shown": list(self.shown)} if self.shown is not None else {}),
            "sha256": hashlib.sha256(self.text.encode("utf-8")).hexdigest(),
            "scores": {
                "seed": round(self.seed_score, 6),
                "rerank": round(self.rerank_score, 6),
                "graph_support": round(self.support_score, 6),
            },
        }


@dataclass(frozen=True)
class Prompt:
    """Stage 6: the generator's input with its numbered sources."""

    system: str
    user: str
    sources: tuple[Source, ...]
    tokens: int
    dropped: int = 0  # sources left out because they did not fit in the context window


@dataclass
class Retrieval:
    """Stages 1 to 6 of one question: everything generation and provenance need."""

    question: str
    collections: tuple[str, ...] | None
    analysis: QueryAnalysis
    seeds: Seeds
    candidates: list[Candidate]
    sources: list[Source]
    prompt: Prompt
    timings_ms: dict[str, float]
    stats: dict[str, Any] = field(default_factory=dict)
