"""Merge suggestions: which pairs are proposed, in which order, which one is kept, and that the
work stays bounded (pairs only within a type group, the edit ratio skipped when it cannot matter)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from apps.curation.suggestions import (
    ALIAS_SCORE,
    Candidate,
    candidates_read,
    names_of,
    pair_score,
    rank_pairs,
    token_containment,
)
from apps.graph import cypher
from apps.graph.identity import entity_group
from apps.models.interfaces import Vectors
from tests.unit.curation.fakes import FakeDriver
from tests.unit.vectors.fakes import hashing_embed


def person(name: str, mentions: int = 1, *aliases: str, type_: str = "PERSON") -> Candidate:
    return Candidate(id=name.lower().replace(" ", "-"), name=name, type=type_, aliases=aliases, mentions=mentions)


def embed(texts: Sequence[str]) -> Vectors:
    return hashing_embed(list(texts), dim=64)


def pairs_of(candidates: list[Candidate], **options: object) -> list[tuple[str, str]]:
    return [(s.keep.name, s.drop.name) for s in rank_pairs(candidates, embed=embed, **options)]  # type: ignore[arg-type]


def test_type_groups_follow_entity_identity() -> None:
    assert entity_group("GPE") == entity_group("LOC") == "place"
    assert entity_group("PERSON") != entity_group("ORG")
    assert entity_group("SOMETHING") == "something"


def test_names_are_normalised_with_their_aliases() -> None:
    assert names_of(person("The  Radium Institute", 1, "Radium Institute's")) == {"radium institute"}
    assert token_containment("lovelace", "ada lovelace") == 1.0
    assert token_containment("marie curie", "pierre curie") == 0.5
    assert token_containment("", "x") == 0.0


def test_a_shared_name_or_alias_lifts_the_score() -> None:
    assert pair_score(name=0.1, alias=True, embedding=0.0) == ALIAS_SCORE
    assert pair_score(name=0.8, alias=False, embedding=None) == 0.8
    assert pair_score(name=0.8, alias=False, embedding=0.4) == pytest.approx(0.6)
    assert pair_score(name=0.8, alias=False, embedding=-0.5) == pytest.approx(0.4)


def test_likely_duplicates_rank_first_and_the_more_mentioned_entity_is_kept() -> None:
    candidates = [
        person("Ada Lovelace", 5),
        person("Lovelace", 9),
        person("Charles Babbage", 4),
        person("Babbage", 2),
        person("Albert Einstein", 3),
        person("Marie Curie", 2),
    ]
    found = rank_pairs(candidates, embed=embed)
    pairs = [(s.keep.name, s.drop.name) for s in found]
    assert pairs[:2] == [("Lovelace", "Ada Lovelace"), ("Charles Babbage", "Babbage")]
    assert ("Albert Einstein", "Marie Curie") not in pairs and ("Marie Curie", "Albert Einstein") not in pairs
    assert all(s.score >= 0.6 for s in found) and found == sorted(found, key=lambda s: -s.score)
    assert found[0].tokens == 1.0 and found[0].embedding is not None


def test_only_entities_of_the_same_type_group_pair_up() -> None:
    candidates = [
        person("Paris", 4, type_="GPE"),
        person("Paris", 3, type_="PERSON"),
        person("Paris France", 1, type_="LOC"),
    ]
    pairs = pairs_of(candidates)
    assert pairs == [("Paris", "Paris France")]


def test_an_alias_match_is_suggested_even_when_the_names_differ() -> None:
    candidates = [person("United States", 8, "USA"), person("U.S.A.", 2, "USA"), person("Canada", 3)]
    found = rank_pairs(candidates, embed=None)
    assert [(s.keep.name, s.drop.name, s.alias) for s in found] == [("United States", "U.S.A.", True)]
    assert found[0].embedding is None and found[0].score == ALIAS_SCORE


def test_the_limit_and_threshold_bound_the_answer() -> None:
    candidates = [person(f"Curie {i}", i) for i in range(1, 12)]
    assert len(rank_pairs(candidates, embed=embed, limit=5)) == 5
    assert rank_pairs(candidates, embed=embed, min_score=1.01) == []
    assert rank_pairs([], embed=embed) == []


def test_two_hundred_candidates_are_embedded_in_one_batch() -> None:
    rng = np.random.default_rng(3)
    words = ["ada", "lovelace", "charles", "babbage", "marie", "curie", "london", "paris", "radium", "institute"]
    candidates = [
        person(" ".join(rng.choice(words, size=2, replace=False)) + f" {i}", int(rng.integers(1, 50)))
        for i in range(200)
    ]
    calls: list[int] = []

    def counting_embed(texts: Sequence[str]) -> Vectors:
        calls.append(len(texts))
        return embed(texts)

    found = rank_pairs(candidates, embed=counting_embed)
    assert len(calls) == 1 and calls[0] <= 200  # one batch, not one call per pair
    assert 0 < len(found) <= 50
    assert [s.score for s in found] == sorted((s.score for s in found), reverse=True)


def test_candidates_are_read_for_the_readable_collections() -> None:
    record = {"id": "e1", "name": "Ada", "type": "PERSON", "aliases": ["Lovelace"], "mentions": 3}
    driver = FakeDriver({cypher.CURATION_SUGGESTION_CANDIDATES: [record]})
    [candidate] = candidates_read(driver=driver, collections=("lab",), limit=7)  # type: ignore[arg-type]
    assert candidate == Candidate("e1", "Ada", "PERSON", ("Lovelace",), 3)
    assert driver.params_of(cypher.CURATION_SUGGESTION_CANDIDATES) == [{"collections": ["lab"], "limit": 7}]
