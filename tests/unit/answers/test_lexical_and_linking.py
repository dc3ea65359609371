"""Lexical seeds (query, fusion) and entity linking (spans, longest match, scores), without Neo4j."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from apps.answers import lexical, linking
from apps.answers.expansion import specificity
from apps.answers.lexical import LexicalParams, lexical_query, seeds_fuse
from apps.answers.linking import LinkParams, entities_link
from apps.answers.scope import EVERY_COLLECTION
from apps.answers.types import Seed
from apps.graph import cypher
from apps.graph.identity import TITLE_LABEL, entity_id, entity_key
from apps.ingest.names import name_spans


def test_the_lexical_query_keeps_words_and_drops_lucene_syntax() -> None:
    query = lexical_query('Who directed "Dr. No" (1962) AND NOT Goldfinger? title:x* a+b~2 [c TO d]')
    assert query == "who directed dr no 1962 and not goldfinger title 2 to"  # lower case: no operators
    assert lexical_query("¿Qué? ... !!!") == "qué"
    assert lexical_query("?!") == ""


def test_the_lexical_query_repeats_no_word_and_is_bounded() -> None:
    words = " ".join(f"w{n}" for n in range(100))
    assert len(lexical_query(f"{words} {words}").split()) == lexical.MAX_QUERY_TERMS


def _unit(vector: list[float]) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    return array / np.linalg.norm(array)


def test_lexical_hits_join_the_dense_seeds_scored_by_their_stored_vectors() -> None:
    query = _unit([1.0, 0.0])
    dense = [Seed("a", "Chunk", 0.9, "text", "c"), Seed("b", "Chunk", 0.5, "text", "c")]
    hits = [("b", "Chunk", 8.0, "c"), ("x", "Chunk", 4.0, "c"), ("gone", "Row", 2.0, "c")]
    stored = {"x": _unit([0.6, 0.8])}
    asked: list[list[str]] = []

    def stored_vectors(ids: Any, space: str) -> dict[str, np.ndarray]:
        assert space == "text"
        asked.append(list(ids))
        return {node_id: stored[node_id] for node_id in ids if node_id in stored}

    fused = seeds_fuse(dense=dense, lexical=hits, query_vectors={"text": query}, stored_vectors=stored_vectors)
    assert [seed.node_id for seed in fused] == ["a", "x", "b", "gone"]
    by_id = {seed.node_id: seed for seed in fused}
    assert by_id["a"].lexical == 0.0 and by_id["a"].space == "text"
    assert by_id["b"].lexical == 1.0 and by_id["b"].score == 0.5  # found by both: keeps its cosine
    assert by_id["x"].space == "lexical" and by_id["x"].score == pytest.approx(0.6) and by_id["x"].lexical == 0.5
    assert by_id["gone"].score == 0.0 and by_id["gone"].label == "Row"
    assert asked == [["x", "gone"]]  # only the units the dense search did not find are looked up


def test_no_lexical_hits_leave_the_dense_seeds_as_they_are() -> None:
    dense = [Seed("a", "Chunk", 0.9, "text")]
    fused = seeds_fuse(
        dense=dense, lexical=[], query_vectors={"text": _unit([1.0])}, stored_vectors=lambda ids, space: {}
    )
    assert fused == dense


def test_lexical_search_asks_the_index_for_more_when_a_scope_filters_it(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    def graph_read(driver: Any, statement: str, **params: Any) -> list[dict[str, Any]]:
        calls.append(params)
        return [{"id": "u", "label": "Chunk", "score": 3.5, "collection": "c"}]

    monkeypatch.setattr(lexical, "graph_read_timed", graph_read)
    params = LexicalParams(k=5, overfetch=20)
    found = lexical.lexical_search(driver=None, question="Who is Ada?", collections=["c"], params=params)  # type: ignore[arg-type]
    assert found == [("u", "Chunk", 3.5, "c")]
    assert calls[0]["limit"] == 100 and calls[0]["k"] == 5 and calls[0]["collections"] == ["c"]
    lexical.lexical_search(driver=None, question="Who is Ada?", collections=EVERY_COLLECTION, params=params)  # type: ignore[arg-type]
    assert calls[1]["limit"] == 5 and calls[1]["collections"] is None
    assert lexical.lexical_search(driver=None, question="Ada", collections=[], params=params) == []  # type: ignore[arg-type]
    off = LexicalParams(k=0)
    assert lexical.lexical_search(driver=None, question="Ada", collections=EVERY_COLLECTION, params=off) == []  # type: ignore[arg-type]
    assert len(calls) == 2


def test_name_spans_start_and_end_on_name_words_within_a_sentence() -> None:
    question = "Who is the mother of the director of film Polish-Russian War?"
    spans = {question[a:b] for a, b in name_spans(question, 6, skip_first=True)}
    assert spans == {"Polish-Russian War", "Polish-Russian", "War"}  # "Who" alone is no name
    text = 'Leland, North Carolina is a town. The St. Louis Cardinals starred in "Charmed" (1998).'
    spans = {text[a:b] for a, b in name_spans(text, 8)}
    assert {"Leland, North Carolina", "St. Louis Cardinals", "Charmed", "1998"} <= spans
    assert not any("town" in span or 'Charmed"' in span for span in spans)
    assert "Carolina is a town. The" not in spans  # no span crosses a sentence end
    assert name_spans("Flute Sonata in C major, BWV 1033", 6)[-1] != (0, 33)  # longer than 6 words


class _Graph:
    """Answers ANSWER_ENTITY_LINK from a few entities: id -> (name, degree)."""

    def __init__(self, entities: dict[str, tuple[str, int]]) -> None:
        self.entities = entities
        self.asked: list[str] = []

    def read(self, driver: Any, statement: str, **params: Any) -> list[dict[str, Any]]:
        self.asked = [candidate["id"] for candidate in params["candidates"]]
        return [
            {"span": c["span"], "id": c["id"], "name": self.entities[c["id"]][0], "degree": self.entities[c["id"]][1]}
            for c in params["candidates"]
            if c["id"] in self.entities
        ]


def _id(name: str, label: str) -> str:
    return entity_id(entity_key(name, label))


def test_the_longest_matching_span_links_and_rare_names_link_strongest(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _Graph(
        {
            _id("Polish-Russian War", TITLE_LABEL): ("Polish-Russian War", 1),
            _id("War", "EVENT"): ("War", 40),
            _id("Polish-Russian", "NORP"): ("Polish-Russian", 3),
            _id("Xawery Żuławski", "PERSON"): ("Xawery Żuławski", 3),
        }
    )
    monkeypatch.setattr(linking, "graph_read_timed", graph.read)
    linked = entities_link(
        driver=None,  # type: ignore[arg-type]
        question="Who is the mother of the director of film Polish-Russian War?",
        names=[],
        params=LinkParams(),
    )
    assert [entity.name for entity in linked] == ["Polish-Russian War"]  # "War" and "Polish-Russian" lie inside it
    assert linked[0].score == 1.0 and linked[0].span == "Polish-Russian War"

    linked = entities_link(
        driver=None,  # type: ignore[arg-type]
        question="Was Xawery Żuławski in the War?",
        names=["Xawery Żuławski"],
        params=LinkParams(),
    )
    assert [entity.name for entity in linked] == ["Xawery Żuławski", "War"]
    assert linked[1].score == pytest.approx(specificity(40) / specificity(3))


def test_a_name_tagged_differently_in_the_question_still_links(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _Graph({_id("Paris", "ORG"): ("Paris", 2)})
    monkeypatch.setattr(linking, "graph_read_timed", graph.read)
    linked = entities_link(driver=None, question="Where is Paris?", names=["Paris"], params=LinkParams(spans=False))  # type: ignore[arg-type]
    assert [entity.entity_id for entity in linked] == [_id("Paris", "ORG")]
    assert len(graph.asked) == len(linking.LINK_LABELS)  # one lookup per entity group, spans off


def test_entities_above_the_degree_limit_do_not_link_and_nothing_asks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _Graph({_id("London", "GPE"): ("London", 900)})
    monkeypatch.setattr(linking, "graph_read_timed", graph.read)
    assert entities_link(driver=None, question="Is London big?", names=[], params=LinkParams(max_degree=500)) == []  # type: ignore[arg-type]
    assert entities_link(driver=None, question="what is it?", names=[], params=LinkParams()) == []  # type: ignore[arg-type]


def test_a_missing_full_text_index_leaves_the_dense_seeds_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from neo4j.exceptions import ClientError

    def graph_read(driver: Any, statement: str, **params: Any) -> list[dict[str, Any]]:
        error = ClientError("There is no such fulltext schema index: unit_text_fulltext")
        raise error

    monkeypatch.setattr(lexical, "graph_read_timed", graph_read)
    found = lexical.lexical_search(driver=None, question="Who is Ada?", collections=["c"], params=LexicalParams())  # type: ignore[arg-type]
    assert found == []


def test_a_name_no_entity_holds_links_to_the_nearest_entity_names_scaled_by_their_cosine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    exact = _Graph({_id("Xawery Żuławski", "PERSON"): ("Xawery Żuławski", 3)})
    nearest_asked: list[dict[str, Any]] = []

    def read(driver: Any, statement: str, **params: Any) -> list[dict[str, Any]]:
        if statement is cypher.ANSWER_ENTITY_LINK:
            return exact.read(driver, statement, **params)
        assert statement is cypher.ANSWER_ENTITY_NEAREST
        nearest_asked.append(params)
        return [
            {"span": row["span"], "id": "e-war", "name": "Polish-Russian War (1605-1618)", "score": 0.95, "degree": 3}
            for row in params["rows"]
        ] + [{"span": params["rows"][0]["span"], "id": "e-hub", "name": "War", "score": 0.92, "degree": 900}]

    embedded: list[list[str]] = []

    def embed(texts: Any) -> np.ndarray:
        embedded.append(list(texts))
        return np.ones((len(texts), 4), dtype=np.float32)

    monkeypatch.setattr(linking, "graph_read_timed", read)
    question = "Did Xawery Żuławski direct Polish Russian War?"
    on = LinkParams(embedding=True)
    linked = entities_link(driver=None, question=question, names=[], params=on, embed=embed)  # type: ignore[arg-type]
    # Only the span that matched nothing and overlaps no match is embedded; the hub stays out.
    assert embedded == [["Polish Russian War"]]
    assert nearest_asked[0]["k"] == LinkParams().embedding_k
    assert nearest_asked[0]["min_score"] == LinkParams().embedding_min_score
    assert [(entity.name, entity.match) for entity in linked] == [
        ("Xawery Żuławski", "exact"),
        ("Polish-Russian War (1605-1618)", "embedding"),
    ]
    assert linked[1].score == pytest.approx(0.95) and linked[1].span == "Polish Russian War"

    embedded.clear()
    entities_link(driver=None, question="What happened in Oslo in 1986?", names=[], params=on, embed=embed)  # type: ignore[arg-type]
    assert embedded == [["Oslo"]]  # a bare year is never embedded
    embedded.clear()
    off = LinkParams()  # the default: exact matches only
    assert len(entities_link(driver=None, question=question, names=[], params=off, embed=embed)) == 1  # type: ignore[arg-type]
    assert embedded == []
