"""What an empty scope means all the way down: nothing. The vector store finds nothing, the Cypher
gets an empty list (never null), retrieval returns no sources and no paths, and asking fails with
"nothing matches" without queueing a generation. None is refused wherever a scope is taken."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from apps.answers import services
from apps.answers.models import Answer
from apps.answers.pipeline import RetrievalParams, RetrievalTools, retrieve, units_fetch
from apps.answers.prompt import NOT_FOUND
from apps.answers.scope import EVERY_COLLECTION, answer_scope, scope_names
from apps.answers.seeds import SeedLimits, seeds_search
from apps.answers.types import Candidate
from apps.graph import cypher
from apps.vectors.index import VectorIndex
from apps.vectors.types import VectorMatch
from tests.unit.accounts.conftest import OUTSIDERS, PRIVATE, PUBLIC, Cast
from tests.unit.vectors.fakes import clustered, items, space

DIM = 8


# --- the scope value ----------------------------------------------------------------------------


def test_a_scope_is_names_or_every_collection_never_none() -> None:
    assert scope_names([]) == [] and scope_names(set()) == []
    assert scope_names(["b", "a", "b"]) == ["a", "b"] and scope_names({"x"}) == ["x"]
    assert scope_names(EVERY_COLLECTION) is None
    for wrong in (None, "vault", b"vault", 3):
        with pytest.raises(TypeError, match="retrieval scope"):
            scope_names(wrong)  # type: ignore[arg-type]


@pytest.mark.django_db
@pytest.mark.parametrize("persona", OUTSIDERS)
def test_an_outsider_asking_for_the_vault_gets_the_empty_scope(cast: Cast, persona: str) -> None:
    user = getattr(cast, persona)
    assert answer_scope(user=user, requested=[PRIVATE]) == answer_scope(user=user, requested=["nowhere"]) == []
    assert answer_scope(user=user, requested=None) == [PUBLIC]


@pytest.mark.django_db
def test_only_admins_get_every_collection(cast: Cast) -> None:
    assert answer_scope(user=cast.admin, requested=None) is EVERY_COLLECTION
    assert answer_scope(user=cast.owner, requested=None) == [PUBLIC, PRIVATE]


# --- the vector store -------------------------------------------------------------------------------


@pytest.mark.parametrize("index_type", ["flat", "hnsw", "ivfpq"])
def test_the_vector_index_finds_nothing_in_no_collections(index_type: str) -> None:
    index = VectorIndex(space(index_type))
    data = clustered(120, 32)
    index.add(items(0, 60, collection=PUBLIC) + items(60, 120, collection=PRIVATE), data)
    assert index.search(data[:3], 5, collections=set()) == [[], [], []]
    assert index.search(data[:3], 5, collections={"nowhere"}) == [[], [], []]
    assert all(len(row) == 5 for row in index.search(data[:3], 5, collections=None))


def test_seeds_search_passes_the_empty_set_down_never_none() -> None:
    calls: list[Any] = []

    def search(*, space: str, queries: Any, k: int, collections: set[str] | None) -> list[list[VectorMatch]]:
        calls.append(collections)
        return [[]]

    vectors = {"text": unit_vector(0), "clip": unit_vector(1)}
    assert seeds_search(vectors=vectors, limits=SeedLimits(2, 1, 1), collections=[], search=search) == []
    assert calls == [set(), set()]
    with pytest.raises(TypeError):
        seeds_search(vectors=vectors, limits=SeedLimits(), collections=None, search=search)  # type: ignore[arg-type]


# --- the graph -------------------------------------------------------------------------------------


class RecordingDriver:
    """Answers every query with no rows, and keeps each statement's parameters (through
    ``execute_query`` or a session's ``run``, as ``apps.graph.db.graph_read_timed`` reads)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def execute_query(self, statement: str, **params: Any) -> tuple[list[Any], None, None]:
        self.calls.append((statement, params))
        return [], None, None

    @contextlib.contextmanager
    def session(self, **_config: Any) -> Iterator[RecordingDriver]:
        yield self

    def run(self, statement: str, params: dict[str, Any]) -> EmptyResult:
        self.calls.append((statement, params))
        return EmptyResult()


class EmptyResult(list[Any]):
    def keys(self) -> list[str]:
        return []


def test_the_cypher_gets_an_empty_list_for_an_empty_scope_and_null_only_for_every_collection() -> None:
    driver = RecordingDriver()
    units_fetch(driver=driver, candidates=[Candidate("c1", "Chunk")], collections=[])  # type: ignore[arg-type]
    units_fetch(driver=driver, candidates=[Candidate("c1", "Chunk")], collections=EVERY_COLLECTION)  # type: ignore[arg-type]
    assert [params["collections"] for _, params in driver.calls] == [[], None]
    with pytest.raises(TypeError):
        units_fetch(driver=driver, candidates=[], collections=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("statement", [cypher.ANSWER_EXPAND, cypher.ANSWER_UNITS])
def test_every_answering_statement_applies_the_collection_predicate(statement: str) -> None:
    assert "$collections IS NULL OR" in statement
    if statement is cypher.ANSWER_EXPAND:  # seeds, RELATED evidence, reached units and NEXT neighbours
        assert statement.count("$collections") >= 7


# --- the whole retrieval, and asking --------------------------------------------------------------


class FakeText:
    name = "fake-text"
    dim = DIM

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([unit_vector(len(text) % DIM) for text in texts]) if texts else np.zeros((0, DIM), np.float32)

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.embed_documents(texts)


def unit_vector(axis: int) -> npt.NDArray[np.float32]:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[axis] = 1.0
    return vector


def fake_tools(driver: RecordingDriver, searched: list[Any]) -> RetrievalTools:
    """Tools over a store holding one private chunk: it answers only when the vault is in scope."""

    def search(*, space: str, queries: Any, k: int, collections: set[str] | None) -> list[list[VectorMatch]]:
        searched.append(collections)
        secret = VectorMatch("secret-chunk", "Chunk", PRIVATE, 0.9)
        return [[secret] if collections is None or PRIVATE in collections else []]

    return RetrievalTools(
        driver=driver,  # type: ignore[arg-type]
        text=FakeText(),
        clip=None,
        reranker=None,
        tokenize=str.split,
        count_tokens=lambda text: len(text.split()),
        search=search,
        stored_vectors=lambda ids, space: {},
    )


def test_retrieval_over_no_collections_finds_no_sources_and_no_paths() -> None:
    driver, searched = RecordingDriver(), list[Any]()
    retrieval = retrieve(
        question="What is in the vault?", collections=[], tools=fake_tools(driver, searched), params=RetrievalParams()
    )
    assert retrieval.sources == [] and retrieval.candidates == [] and retrieval.seeds.hits == ()
    assert retrieval.collections == ()
    assert searched == [set()]
    assert all(params["collections"] == [] for _, params in driver.calls) and len(driver.calls) == 2


def test_retrieval_refuses_none_before_any_work() -> None:
    driver, searched = RecordingDriver(), list[Any]()
    with pytest.raises(TypeError):
        retrieve(question="q", collections=None, tools=fake_tools(driver, searched), params=RetrievalParams())  # type: ignore[arg-type]
    assert not searched and not driver.calls


@pytest.mark.django_db
def test_asking_over_no_collections_says_nothing_matches_without_generating(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(services, "generation_queue", lambda answer: pytest.fail("nothing to generate from"))
    monkeypatch.setattr(services, "model_names", lambda tools: {})
    driver, searched = RecordingDriver(), list[Any]()
    result = services.answer_ask(
        question="What is in the vault?",
        collections=[],
        generate=True,
        mode="graph",
        user=None,
        tools=fake_tools(driver, searched),
        params=RetrievalParams(),
    )
    assert result["state"] == Answer.NOT_FOUND and result["reason"] == services.NOTHING_FOUND
    assert result["sources"] == [] and result["answer"] == NOT_FOUND and result["tokens"] == []
    assert Answer.objects.get().collections == []
