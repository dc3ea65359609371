"""What the search page shows of an answer: the supporting sentence marked, the cited table cell,
the latency bar's shares."""

from __future__ import annotations

import pytest

from apps.answers.display import (
    Piece,
    best_span,
    highlight,
    latency_stages,
    row_cells,
    source_views,
    supported_spans,
)

TEXT = "The society was founded in 1912. Its first president was Gwendolyn Pryce."
SENTENCES = [[0, 32], [33, 73]]
ROW = "Census / Moons, row 2: planet: Jupiter; moons: 95; discovered: 1610."


def support(number: int, start: int, end: int, score: float, **extra: object) -> dict[str, object]:
    return {"number": number, "start": start, "end": end, "score": score, "id": "x", "sentence": 0, **extra}


def test_the_sentence_the_tokens_lean_on_most_is_the_supported_one() -> None:
    tokens = [
        {"text": "Gwen", "sources": [support(1, 33, 73, 0.6), support(1, 0, 32, 0.3)]},
        {"text": "dolyn", "sources": [support(1, 33, 73, 0.5), support(2, 0, 10, 0.9)]},
        {"text": "1912", "sources": [support(1, 0, 32, 0.4)]},
    ]
    assert supported_spans(tokens) == {1: (33, 73), 2: (0, 10)}
    assert supported_spans([]) == {}


def test_highlight_marks_exactly_the_span() -> None:
    assert highlight(TEXT, (33, 73)) == [Piece(TEXT[:33]), Piece(TEXT[33:73], marked=True)]
    assert highlight(TEXT, (0, 32))[0] == Piece("The society was founded in 1912.", marked=True)
    assert highlight(TEXT, None) == [Piece(TEXT)]
    assert highlight(TEXT, (50, 500)) == [Piece(TEXT)], "a span outside the text marks nothing"
    assert highlight("", None) == []


def test_without_provenance_the_sentence_closest_to_the_question_is_marked() -> None:
    assert best_span(TEXT, SENTENCES, "Who was the first president?") == (33, 73)
    assert best_span(TEXT, SENTENCES, "When was it founded?") == (0, 32)
    assert best_span(TEXT, SENTENCES, "zebra") == (0, 32), "a tie goes to the first sentence"
    assert best_span(TEXT, [], "anything") is None


def test_a_row_becomes_cells_with_the_cited_cell_marked() -> None:
    start = ROW.index("moons: 95")
    cells = row_cells(ROW, (start, start + 9))
    assert [(c.column, c.value, c.marked) for c in cells] == [
        ("planet", "Jupiter", False),
        ("moons", "95", True),
        ("discovered", "1610", False),
    ]
    by_question = row_cells(ROW, None, "When was it discovered?")
    assert [c.column for c in by_question if c.marked] == ["discovered"]
    assert row_cells("not a row at all", None) == []


def test_latency_stages_share_the_whole_bar_in_pipeline_order() -> None:
    stages = latency_stages({"generation": 600.0, "analysis": 100.0, "embed": 300.0, "rerank": 0.0, "queue": 0})
    assert [s.name for s in stages] == ["analysis", "embed", "generation"]
    assert [s.percent for s in stages] == [10.0, 30.0, 60.0]
    assert sum(s.percent for s in stages) == pytest.approx(100.0)
    assert [s.ms for s in stages] == [100.0, 300.0, 600.0]
    assert latency_stages({}) == [] and latency_stages({"analysis": 0}) == []


def test_source_views_prefer_provenance_then_the_question() -> None:
    sources = [
        {"number": 1, "kind": "chunk", "text": TEXT, "sentences": SENTENCES, "id": "a"},
        {"number": 2, "kind": "row", "text": ROW, "sentences": [], "id": "b"},
        {"number": 3, "kind": "image", "text": "Image of a cat.", "sentences": [], "id": "c"},
    ]
    tokens = [{"text": "1912", "sources": [support(1, 0, 32, 0.8)]}]
    views = source_views(sources, tokens, "How many moons has the first president?")
    first, row, image = views
    assert first["from_provenance"] and [p.text for p in first["pieces"] if p.marked] == [TEXT[:32]]
    assert [c.column for c in row["cells"] if c.marked] == ["moons"]
    assert image["pieces"] == [Piece("Image of a cat.")] and image["cells"] == []
    asked = source_views(sources[:1], [], "Who was the first president?")[0]
    assert not asked["from_provenance"] and [p.text for p in asked["pieces"] if p.marked] == [TEXT[33:73]]
