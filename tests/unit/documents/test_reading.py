"""The document viewer's text: chunks shown without their overlaps, cut at page starts, the cited
span marked where it falls (also inside the overlap a later chunk repeats), windows of positions."""

from __future__ import annotations

from typing import Any

from apps.documents.reading import Citation, passages_of, window

TEXT = "One sentence here. Two sentence there. Three on page two. Four ends it."
#       0                 19                  39                 58


def chunk(ident: str, ord_: int, start: int, end: int) -> dict[str, Any]:
    return {"id": ident, "ord": ord_, "start": start, "text": TEXT[start:end], "page": None}


ROWS = [chunk("a", 0, 0, 38), chunk("b", 1, 19, 57), chunk("c", 2, 39, len(TEXT))]


def shown(passages: list[Any]) -> str:
    return "".join(piece.text for p in passages for piece in p.pieces)


def test_each_piece_of_text_is_shown_once_in_order() -> None:
    passages = passages_of(ROWS, Citation(), page_starts=[], page_numbers=[])
    assert shown(passages).replace(" ", "") == TEXT.replace(" ", "")
    assert [p.anchor for p in passages] == ["unit-a", "unit-b", "unit-c"]


def test_page_starts_cut_the_text_and_number_it() -> None:
    passages = passages_of(ROWS, Citation(), page_starts=[0, 39], page_numbers=[1, 2])
    assert [(p.page, p.pieces[0].text[:6]) for p in passages] == [(1, "One se"), (2, "Three "), (2, " Four ")]
    assert [p.anchor for p in passages] == ["unit-a", "unit-b", "unit-c"], "the blank piece before page 2 is left out"


def test_a_span_cited_in_a_later_chunk_is_marked_where_it_is_shown() -> None:
    # "Two sentence there." is chunk b's text [0, 19), shown in chunk a's passage (a holds it first).
    passages = passages_of(ROWS, Citation("b", 0, 19), page_starts=[], page_numbers=[])
    marked = [(p.anchor, piece.text) for p in passages for piece in p.pieces if piece.marked]
    assert marked == [("unit-a", "Two sentence there.")]
    assert [p.cited for p in passages] == [True, False, False]


def test_a_unit_cited_without_a_span_is_outlined_whole() -> None:
    passages = passages_of(ROWS, Citation("c"), page_starts=[], page_numbers=[])
    assert [p.anchor for p in passages] == ["unit-a", "unit-b", "cited"]
    assert not any(piece.marked for p in passages for piece in p.pieces)


def test_windows_hold_the_position_near_their_middle() -> None:
    assert window(None, 50, 120) == (0, 120)
    assert window(500, 1000, 120) == (440, 560)
    assert window(5, 1000, 120) == (0, 120)
    assert window(990, 1000, 120) == (880, 1000)
