"""The answering stages that need no services: analysis, path scoring, PageRank, rerank, selection, prompt."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from apps.answers.analysis import shannon_entropy
from apps.answers.expansion import ExpansionParams, expand_parameters, expand_rows, question_entity_ids, specificity
from apps.answers.ppr import personalized_pagerank
from apps.answers.prompt import SYSTEM, prompt_assemble
from apps.answers.rerank import BridgeParams, bridges_promote, rerank_apply, rerank_scores
from apps.answers.scope import EVERY_COLLECTION
from apps.answers.seeds import SeedLimits, seeds_search
from apps.answers.selection import SelectionParams, dynamic_k, sources_select
from apps.answers.types import Candidate, GraphPath, Seed
from apps.core.language import detect_language
from apps.graph import cypher
from apps.graph.identity import entity_id, entity_key
from apps.vectors.types import VectorMatch


def words(text: str) -> list[str]:
    return text.split()


def unit(vector: list[float]) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    return v / np.linalg.norm(v)


# --- analysis ------------------------------------------------------------------------------


def test_entropy_of_distinct_tokens_is_log2_of_their_number() -> None:
    assert shannon_entropy(["a", "b", "c", "d"]) == pytest.approx(2.0)
    assert shannon_entropy(["a", "a", "a"]) == 0.0
    assert shannon_entropy([]) == 0.0
    assert shannon_entropy(["a", "a", "b", "b"]) == pytest.approx(1.0)
    assert shannon_entropy(["a", "a", "a", "b"]) == pytest.approx(-(0.75 * math.log2(0.75) + 0.25 * math.log2(0.25)))


def test_language_of_english_chinese_and_arabic_questions() -> None:
    assert detect_language("Who was the first president of the association?") == "en"
    assert detect_language("谁是该协会的第一任主席？") == "zh"  # noqa: RUF001
    assert detect_language("من كان أول رئيس للجمعية؟") == "ar"
    assert detect_language("12345 ?") == "und"


def test_entity_names_found_in_a_helper_thread_are_the_same_as_inline() -> None:
    import threading

    from apps.answers.analysis import PendingEntities, query_analyse, question_entities
    from apps.ingest.extraction import DEFAULT_MODEL

    question = "Which university did the author of Pride and Prejudice attend in Oxford, England?"
    inline = question_entities(question, model=DEFAULT_MODEL)
    assert inline  # the question names things
    pending = PendingEntities(question, model=DEFAULT_MODEL)
    analysis = query_analyse(question=question, tokenize=words, ner_model=None)
    assert analysis.entities == ()  # left to the helper thread
    assert pending.result() == inline
    assert PendingEntities(question, model=None).result() == ()
    names = [thread.name for thread in threading.enumerate()]
    assert any(name.startswith("question-entities") for name in names)


def test_language_decision_is_langids_own_on_every_xquad_question() -> None:
    """The sparse scoring gives langid.classify's answer (its full dense product), question by question."""
    import json

    import langid
    from django.conf import settings

    questions = [
        qa["question"]
        for language in ("en", "zh", "ar")
        for article in json.loads(
            (Path(settings.DEMO_DATA_DIR) / f"multilingual/xquad/xquad.{language}.json").read_text()
        )["data"][:10]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]
    questions += ["Wie alt ist der Kölner Dom?", "¿Dónde nació Cervantes?", "Кто написал Войну и мир?"]
    assert len(questions) > 500
    assert [detect_language(q) for q in questions] == [langid.classify(q)[0] for q in questions]


# --- seeds -------------------------------------------------------------------------------------


def test_seeds_keep_a_quota_per_label_and_the_best_score_per_unit() -> None:
    text_hits = [VectorMatch(f"c{i}", "Chunk", "x", 0.9 - i / 100) for i in range(6)]
    text_hits.insert(3, VectorMatch("r1", "Row", "x", 0.85))
    calls = []

    def search(*, space: str, queries: np.ndarray, k: int, collections: set[str] | None) -> list[list[VectorMatch]]:
        calls.append((space, k, collections))
        if space == "clip":
            return [[VectorMatch("i1", "Image", "x", 0.3), VectorMatch("c0", "Chunk", "x", 0.95)]]
        return [text_hits]

    vectors = {"text": unit([1, 0]), "clip": unit([0, 1])}
    seeds = seeds_search(vectors=vectors, limits=SeedLimits(2, 1, 1), collections={"x"}, search=search)
    assert [s.node_id for s in seeds] == ["c0", "c1", "r1", "i1"]
    assert seeds[0].score == pytest.approx(0.95) and seeds[0].space == "clip"
    assert calls == [("text", 16, {"x"}), ("clip", 1, {"x"})]


# --- graph expansion scoring ---------------------------------------------------------------


def row(start: str | None, entity: str | None, unit_id: str, **extra: object) -> dict[str, object]:
    """One expansion row (a group of paths) reaching one unit."""
    sentence = extra.pop("sentence", None)
    base = {
        "start": start,
        "start_score": 0.8,
        "entity": entity,
        "degree": 1,
        "related": None,
        "predicate": None,
        "weight": 0,
        "via_degree": 0,
        "units": [unit_id],
        "labels": None if entity is None else ["Chunk"],
        "sentences": None if entity is None else [sentence],
    }
    return base | extra


def test_paths_score_by_specificity_and_decay_per_hop() -> None:
    seeds = [Seed("s", "Chunk", 0.8, "text")]
    rows = [
        row("s", "e1", "a"),  # s -MENTIONS-> e1 <-MENTIONS- a : 2 hops
        row("s", "e1", "b", related="e2", weight=3, via_degree=3),  # 3 hops through RELATED
        row(None, "e3", "c", degree=7),  # a question entity: 1 hop
        row("s", None, "n"),  # NEXT
    ]
    found = expand_rows(rows, seeds, ExpansionParams(decay=0.5))
    assert found["s"].graph_score == pytest.approx(0.8) and found["s"].paths[0].hops == 0
    assert found["a"].paths[0].nodes == ("s", "e1", "a")
    assert found["a"].paths[0].relationships == ("MENTIONS", "MENTIONS")
    assert found["a"].graph_score == pytest.approx(0.8 * 1.0 * 0.25)
    b = found["b"].paths[0]
    assert b.nodes == ("s", "e1", "e2", "b") and b.relationships == ("MENTIONS", "RELATED", "MENTIONS")
    assert b.score == pytest.approx(0.8 * specificity(1) * specificity(3) * 0.75 * 0.125)
    assert found["c"].paths[0].nodes == ("e3", "c") and found["c"].graph_score == pytest.approx(0.8 * (1 / 3) * 0.5)
    assert found["n"].paths[0].relationships == ("NEXT",) and found["n"].graph_score == pytest.approx(0.4)


def test_a_synonym_step_is_named_in_the_path_and_counts_its_score() -> None:
    seeds = [Seed("s", "Chunk", 0.8, "text")]
    score = 0.92
    weight = score / (1 - score)  # what ANSWER_EXPAND returns for a SYNONYM step
    found = expand_rows(
        [row("s", "e1", "b", related="e2", step="SYNONYM", weight=weight, via_degree=3)], seeds, ExpansionParams()
    )
    path = found["b"].paths[0]
    assert path.nodes == ("s", "e1", "e2", "b") and path.relationships == ("MENTIONS", "SYNONYM", "MENTIONS")
    assert path.score == pytest.approx(0.8 * specificity(1) * specificity(3) * score * 0.125)


def test_several_paths_add_up_as_a_noisy_or_and_long_paths_are_cut() -> None:
    seeds = [Seed("s", "Chunk", 1.0, "text"), Seed("t", "Chunk", 1.0, "text")]
    rows = [row("s", "e1", "a", start_score=1.0), row("t", "e2", "a", start_score=1.0)]
    found = expand_rows(rows, seeds, ExpansionParams(decay=0.5))
    assert found["a"].graph_score == pytest.approx(1 - 0.75 * 0.75)
    assert len(found["a"].paths) == 2
    capped = expand_rows([row("s", "e1", "b", related="e2", weight=1, via_degree=1)], seeds, ExpansionParams(hops=2))
    assert "b" not in capped


def test_a_unit_that_names_the_entity_late_is_less_about_it() -> None:
    seeds = [Seed("s", "Chunk", 1.0, "text")]
    rows = [row("s", "e1", "about", start_score=1.0, sentence=0), row("s", "e1", "aside", start_score=1.0, sentence=4)]
    found = expand_rows(rows, seeds, ExpansionParams(decay=0.5, body_weight=0.3))
    assert found["about"].graph_score == pytest.approx(0.25)
    assert found["aside"].graph_score == pytest.approx(0.25 * 0.3)
    assert found["s"].support_score == 0.0 and found["about"].support_score == pytest.approx(0.25)


def test_one_row_carries_every_unit_reached_the_same_way() -> None:
    seeds = [Seed("s", "Chunk", 1.0, "text")]
    grouped = row("s", "e1", "a", start_score=1.0, units=["a", "b", "s"], labels=["Chunk", "Row", "Chunk"])
    grouped["sentences"] = [0, 2, 0]
    found = expand_rows([grouped], seeds, ExpansionParams(decay=0.5, body_weight=0.3))
    assert found["a"].paths[0].nodes == ("s", "e1", "a") and found["a"].graph_score == pytest.approx(0.25)
    assert found["b"].label == "Row" and found["b"].graph_score == pytest.approx(0.25 * 0.3)
    assert found["s"].paths == [found["s"].paths[0]] and found["s"].paths[0].hops == 0  # no path back to itself


def test_question_entity_ids_cover_every_name_group() -> None:
    ids = question_entity_ids(["Paris"])
    assert entity_id(entity_key("Paris", "GPE")) in ids and entity_id(entity_key("Paris", "PERSON")) in ids
    assert len(ids) == len(set(ids))


def test_personalized_pagerank_prefers_nodes_near_the_restart() -> None:
    edges = [("s", "e"), ("e", "a"), ("a", "f"), ("f", "far"), ("x", "y")]
    ranks = personalized_pagerank(edges, {"s": 1.0}, damping=0.5)
    assert ranks["s"] > ranks["e"] > ranks["a"] > ranks["f"] > ranks["far"]
    assert ranks["x"] == pytest.approx(0.0, abs=1e-12)
    assert sum(ranks.values()) == pytest.approx(1.0)


# --- rerank and selection ------------------------------------------------------------------


def cand(node_id: str, vector: list[float] | None, *, graph: float = 0.0, text: str = "some text") -> Candidate:
    c = Candidate(
        node_id, "Chunk", seed_score=0.1, graph_score=graph, support_score=graph, text=text, document=f"{node_id}.txt"
    )
    c.vector = None if vector is None else unit(vector)
    return c


def test_rerank_uses_stored_vectors_and_blends_the_graph_score() -> None:
    query = unit([1, 0, 0])
    candidates = [cand("a", [1, 0, 0]), cand("b", [0, 1, 0], graph=1.0), cand("c", None)]
    scores = rerank_scores(question="q", query_vectors={"text": query}, candidates=candidates, reranker=None)
    assert scores == pytest.approx([1.0, 0.0, 0.1])
    ranked = rerank_apply(candidates, scores, graph_weight=0.5)
    assert [c.node_id for c in ranked] == ["a", "b", "c"]
    assert ranked[1].score == pytest.approx(0.5)


def ranked_with_paths() -> list[Candidate]:
    """s1 and s2 lead (by graph paths) to b1 and b2, which rank low on similarity alone."""
    items = {
        "s1": (0.9, []),
        "s2": (0.8, []),
        "x": (0.7, []),
        "y": (0.6, []),
        "b2": (0.3, [GraphPath(("s2", "e2", "b2"), ("MENTIONS", "MENTIONS"), 0.1)]),
        "b1": (0.2, [GraphPath(("s1", "e1", "b1"), ("MENTIONS", "MENTIONS"), 0.2)]),
        "n": (0.25, [GraphPath(("s1", "e3", "n"), ("MENTIONS", "MENTIONS"), 0.01)]),
    }
    ranked = []
    for node_id, (score, paths) in items.items():
        candidate = Candidate(node_id, "Chunk", paths=paths)
        candidate.rerank_score = candidate.score = score
        ranked.append(candidate)
    return ranked


def test_each_top_candidate_brings_its_bridge_forward() -> None:
    promoted = bridges_promote(ranked_with_paths(), BridgeParams(starts=2, position=2, path_weight=2.0))
    # b1 (0.2 + 2 * 0.2) beats n (0.25 + 2 * 0.01) as the unit s1 leads to; s2 leads to b2.
    assert [c.node_id for c in promoted] == ["s1", "s2", "b1", "b2", "x", "y", "n"]
    scores = [c.score for c in promoted]
    assert scores == sorted(scores, reverse=True)
    assert promoted[2].score == pytest.approx(0.7)


def test_bridges_off_or_already_at_the_top_change_nothing() -> None:
    ranked = ranked_with_paths()
    assert bridges_promote(ranked, BridgeParams(starts=0)) == ranked
    ranked = ranked_with_paths()
    ranked.insert(1, ranked.pop(5))  # b1 already second, and the starts are s1 and b1
    promoted = bridges_promote(ranked, BridgeParams(starts=2, position=2, path_weight=2.0))
    assert [c.node_id for c in promoted] == ["s1", "b1", "s2", "x", "y", "b2", "n"]


class FixedReranker:
    name = "fixed"

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        return [float(len(p)) for p in passages]


def test_a_reranker_scores_the_texts() -> None:
    candidates = [cand("a", [1, 0], text="xx"), cand("b", [1, 0], text="xxxx")]
    assert rerank_scores(
        question="q", query_vectors={"text": unit([1, 0])}, candidates=candidates, reranker=FixedReranker()
    ) == [
        2.0,
        4.0,
    ]


def test_dynamic_k_grows_with_entropy_within_bounds() -> None:
    params = SelectionParams(k_min=3, k_max=8, k_per_bit=1.0)
    assert dynamic_k(0.0, params) == 3
    assert dynamic_k(3.2, params) == 6
    assert dynamic_k(20.0, params) == 8


def test_selection_drops_near_duplicates_and_empty_candidates() -> None:
    params = SelectionParams(k_min=10, k_max=10, duplicate_cosine=0.95)
    candidates = [
        cand("a", [1, 0, 0], text="one two three four"),
        cand("dup", [1, 0.01, 0], text="one two three four again"),
        cand("b", [0, 0, 1], text="five six"),
        cand("empty", [1, 1, 1], text="  "),
    ]
    sources, dropped = sources_select(candidates=candidates, entropy=0.0, params=params)
    assert [s.node_id for s in sources] == ["a", "b"]
    assert [s.number for s in sources] == [1, 2]
    assert dropped == {"k": 10, "duplicates": 1, "empty": 1}


def test_assembly_leaves_out_a_source_that_does_not_fit_and_never_cuts_one() -> None:
    candidates = [
        cand("a", [1, 0, 0], text="one two three four"),
        cand("long", [0, 1, 0], text=" ".join(["w"] * 30)),
        cand("b", [0, 0, 1], text="five six"),
    ]
    sources, _ = sources_select(candidates=candidates, entropy=0.0, params=SelectionParams(k_min=10, k_max=10))

    def count(text: str) -> int:
        return len(words(text))

    budget = count(SYSTEM) + 22
    prompt = prompt_assemble(question="What?", sources=sources, count_tokens=count, budget=budget)
    assert [(s.node_id, s.number) for s in prompt.sources] == [("a", 1), ("b", 2)]
    assert prompt.dropped == 1 and "w w w" not in prompt.user and "[2] b\nfive six" in prompt.user
    assert prompt.tokens == count(prompt.system) + count(prompt.user) <= budget


def test_prompt_numbers_every_source_under_its_name() -> None:
    candidates = [
        cand("a", [1, 0], text="Ada Lovelace wrote the first program."),
        cand("b", [0, 1], text="It ran on the Analytical Engine."),
    ]
    sources, _ = sources_select(candidates=candidates, entropy=1.0, params=SelectionParams())
    prompt = prompt_assemble(
        question="Who wrote the first program?", sources=sources, count_tokens=lambda t: len(words(t))
    )
    assert "[1] a\nAda Lovelace wrote the first program." in prompt.user
    assert "[2] b\nIt ran on the Analytical Engine." in prompt.user
    assert prompt.user.rstrip().endswith("Question: Who wrote the first program?")
    assert prompt.tokens == len(words(prompt.system)) + len(words(prompt.user))


def test_the_expansion_parameters_carry_every_bound_and_switch() -> None:
    seeds = [Seed("s", "Chunk", 0.8, "text")]
    params = ExpansionParams(hops=2, synonym_min_score=2.0, skip_types=("DATE",))
    sent = expand_parameters(seeds=seeds, starts={"e": 0.4}, collections=EVERY_COLLECTION, params=params)
    assert sent == {
        "seeds": [{"id": "s", "score": 0.8}],
        "entities": [{"id": "e", "score": 0.4}],
        "collections": None,
        "fanout": params.fanout,
        "related_fanout": 0,  # two hops: no RELATED or SYNONYM step
        "max_entities": params.max_entities,
        "max_degree": params.max_degree,
        "skip_types": ["DATE"],
        "synonym_min_score": 2.0,
    }
    assert set(sent) == set(re.findall(r"\$(\w+)", cypher.ANSWER_EXPAND))  # exactly what the statement asks for
