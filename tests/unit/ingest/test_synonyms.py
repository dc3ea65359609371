"""Synonym edges at ingestion, without Neo4j: which names are embedded, which neighbours become
edges (types that may name one thing, one edge per pair), and that a refusal loses no document."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import neo4j.exceptions
import numpy as np
import pytest

from apps.graph import cypher
from apps.graph.identity import TITLE_LABEL
from apps.ingest import synonyms
from apps.ingest.synonyms import (
    SynonymParams,
    entity_names_embed,
    neighbour_pairs,
    synonyms_link,
    types_compatible,
    unique_edges,
)
from tests.unit.curation.fakes import FakeDriver


def test_types_that_may_name_one_thing_are_compatible() -> None:
    assert types_compatible("GPE", "LOC")  # both places
    assert types_compatible(TITLE_LABEL, "PERSON") and types_compatible("WORK_OF_ART", TITLE_LABEL)
    assert not types_compatible("PERSON", "ORG")
    assert not types_compatible("DATE", "CARDINAL")


def test_neighbours_become_one_edge_per_pair_from_the_smaller_id_with_the_best_score() -> None:
    rows = [{"id": "b", "type": "ORG"}, {"id": "a", "type": "PERSON"}]
    found = [
        {"source": "b", "target": "c", "type": "ORG", "score": 0.91},
        {"source": "b", "target": "d", "type": "PERSON", "score": 0.99},  # an ORG and a PERSON: no edge
        {"source": "a", "target": "t", "type": TITLE_LABEL, "score": 0.85},
        {"source": "b", "target": "a", "type": "PERSON", "score": 0.97},  # type mismatch
    ]
    edges = neighbour_pairs(rows, found)
    assert edges == [
        {"source": "b", "target": "c", "score": 0.91},
        {"source": "a", "target": "t", "score": 0.85},
    ]
    twice = unique_edges(
        [*edges, {"source": "b", "target": "c", "score": 0.95}, {"source": "a", "target": "t", "score": 0.8}]
    )
    assert twice == [{"source": "a", "target": "t", "score": 0.85}, {"source": "b", "target": "c", "score": 0.95}]


def _embed(calls: list[list[str]]) -> Any:
    def embed(texts: Sequence[str]) -> np.ndarray:
        calls.append(list(texts))
        return np.arange(len(texts) * 3, dtype=np.float32).reshape(len(texts), 3)

    return embed


def test_only_names_without_a_stored_vector_are_embedded_once_each() -> None:
    driver = FakeDriver({cypher.ENTITIES_WITH_VECTORS: [{"ids": ["known"]}]})
    calls: list[list[str]] = []
    entities = [
        {"id": "known", "name": "Paris", "type": "GPE"},
        {"id": "new", "name": "Lyon", "type": "GPE"},
        {"id": "new", "name": "Lyon", "type": "GPE"},  # the same entity in two documents of the batch
    ]
    rows = entity_names_embed(driver=driver, embed=_embed(calls), entities=entities)  # type: ignore[arg-type]
    assert calls == [["Lyon"]]
    assert rows == [{"id": "new", "type": "GPE", "vector": [0.0, 1.0, 2.0]}]
    assert driver.params_of(cypher.ENTITIES_WITH_VECTORS) == [{"ids": ["known", "new"]}]

    driver = FakeDriver({cypher.ENTITIES_WITH_VECTORS: [{"ids": ["known"]}]})
    assert entity_names_embed(driver=driver, embed=_embed(calls), entities=entities[:1]) == []  # type: ignore[arg-type]
    assert calls == [["Lyon"]]  # nothing new: no embedding call


def test_linking_stores_the_vectors_then_asks_for_one_more_neighbour_than_k() -> None:
    rows = [{"id": "a", "type": "ORG", "vector": [1.0, 0.0]}]
    driver = FakeDriver(
        {
            cypher.ENTITY_VECTORS_SET: [],
            cypher.ENTITY_NEIGHBOURS: [{"source": "a", "target": "b", "type": "ORG", "score": 0.93}],
            cypher.SYNONYMS_MERGE: [],
        }
    )
    assert synonyms_link(driver=driver, rows=rows, params=SynonymParams(k=5, min_score=0.8)) == 1  # type: ignore[arg-type]
    assert [statement for statement, _ in driver.calls] == [
        cypher.ENTITY_VECTORS_SET,
        cypher.ENTITY_NEIGHBOURS,
        cypher.SYNONYMS_MERGE,
    ]
    [asked] = driver.params_of(cypher.ENTITY_NEIGHBOURS)
    assert asked["k"] == 6 and asked["min_score"] == 0.8
    assert driver.params_of(cypher.SYNONYMS_MERGE) == [{"rows": [{"source": "a", "target": "b", "score": 0.93}]}]
    assert synonyms_link(driver=driver, rows=rows, params=SynonymParams(k=0)) == 0  # type: ignore[arg-type]
    assert len(driver.calls) == 3  # k=0: nothing asked


def test_a_refused_synonym_query_is_logged_and_loses_nothing(caplog: pytest.LogCaptureFixture) -> None:
    class Refusing(FakeDriver):
        def execute_query(self, statement: str, database_: str | None = None, **params: Any) -> Any:
            if statement is cypher.ENTITY_NEIGHBOURS:
                raise neo4j.exceptions.ClientError("There is no such vector schema index: entity_name_vectors")
            return super().execute_query(statement, database_, **params)

    driver = Refusing({cypher.ENTITY_VECTORS_SET: []})
    rows = [{"id": "a", "type": "ORG", "vector": [1.0, 0.0]}]
    with caplog.at_level("WARNING", logger=synonyms.__name__):
        assert synonyms_link(driver=driver, rows=rows, params=SynonymParams()) == 0  # type: ignore[arg-type]
    assert "synonym edges not added for 1 entities" in caplog.text
