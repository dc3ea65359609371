"""The sentence splitter behind citations: where a citable unit ends and where its marker goes."""

from __future__ import annotations

import pytest

from apps.provenance.sentences import sentence_spans


def units(text: str) -> list[str]:
    return [text[span.start : span.end].strip() for span in sentence_spans(text)]


def marked(text: str) -> list[str]:
    """Each unit with "|" where its citation marker would go."""
    return [
        (text[span.start : span.point] + "|" + text[span.point : span.end]).strip() for span in sentence_spans(text)
    ]


def test_initials_do_not_end_a_sentence() -> None:
    assert units("The Post was founded by E. W. Scripps. It grew.") == [
        "The Post was founded by E. W. Scripps.",
        "It grew.",
    ]
    assert units("J. R. R. Tolkien wrote it. E. A. Poe did not.") == [
        "J. R. R. Tolkien wrote it.",
        "E. A. Poe did not.",
    ]
    assert marked("It was E. W. Scripps.") == ["It was E. W. Scripps|."]


@pytest.mark.parametrize(
    "sentence",
    [
        "Mr. Smith met Mrs. Jones and Ms. Lee.",
        "Dr. Ray and Prof. Stone live in St. Louis.",
        "Martin Luther King Jr. Day is in January.",
        "Ken Griffey Sr. played for the Reds.",
        "The Acme Inc. Board met Scripps Co. Newspapers and Acme Corp. Lawyers.",
        "Acme Ltd. Shares rose.",
        "It was Ali vs. Frazier.",
        "Fruit, e.g. Apples, pears, etc. were sold, i.e. Everything.",
        "About approx. 300 people came.",
        "No. 5 and Vol. 2 were printed.",
        "The U.S. Navy met the U.K. Parliament.",
        "It opens at 9 a.m. Monday and closes at 5 p.m. Friday.",
        "It began on Jan. 5 and ended in Feb. 2020, before Sept. 11 and Dec. 24.",
    ],
)
def test_abbreviations_do_not_end_a_sentence(sentence: str) -> None:
    assert units(f"{sentence} Then it ended.") == [sentence, "Then it ended."]


def test_an_abbreviation_that_closes_a_sentence_ends_it_before_a_sentence_opener() -> None:
    text = "The office is in the U.S. The staff work for Scripps Co. It grew."
    assert units(text) == ["The office is in the U.S.", "The staff work for Scripps Co.", "It grew."]
    assert marked(text) == ["The office is in the U.S.|", "The staff work for Scripps Co.|", "It grew|."]
    assert units("The answer is no. It is not.") == ["The answer is no.", "It is not."]


def test_decimals_versions_and_ellipses_stay_inside_their_sentence() -> None:
    assert units("It costs 3.5 million in v2.1 of Python 3.12. Then it fell.") == [
        "It costs 3.5 million in v2.1 of Python 3.12.",
        "Then it fell.",
    ]
    assert units("He waited... and waited. Then he left...") == ["He waited... and waited.", "Then he left..."]
    assert units("It was built in 1889. 300 workers died.") == ["It was built in 1889.", "300 workers died."]


def test_a_numbered_list_is_one_unit_per_item_and_its_numbers_are_not_sentences() -> None:
    text = "Films:\n1. The Visit\n2. Signs\n3) Split\na) Glass\n- Unbreakable"
    assert units(text) == ["Films:", "1. The Visit", "2. Signs", "3) Split", "a) Glass", "- Unbreakable"]
    assert marked(text)[:3] == ["Films|:", "1. The Visit|", "2. Signs|"]
    assert units("1. The Visit. It came out in 2015.\n2. Signs.") == [
        "1. The Visit.",
        "It came out in 2015.",
        "2. Signs.",
    ]
    assert units("Steps: 1. Open the box. 2. Take it out.") == ["Steps: 1. Open the box.", "2. Take it out."]


def test_line_breaks_end_paragraphs_but_not_a_wrapped_sentence() -> None:
    assert units("It was founded by\nE. W. Scripps in 1878.") == ["It was founded by\nE. W. Scripps in 1878."]
    assert units("One paragraph\n\nAnother one") == ["One paragraph", "Another one"]
    assert units("It ended.\nsoon after, it began") == ["It ended.", "soon after, it began"]


def test_closing_quotes_and_brackets_belong_to_the_sentence() -> None:
    text = 'He said "It is done." Then he left (see the map.) It rained.'
    assert units(text) == ['He said "It is done."', "Then he left (see the map.)", "It rained."]
    assert marked(text) == ['He said "It is done."|', "Then he left (see the map.)|", "It rained|."]
    assert marked("It opened (in 1889).") == ["It opened (in 1889)|."]


def test_questions_and_exclamations_end_a_sentence_unless_it_goes_on() -> None:
    assert units("Really? Yes! It works?!") == ["Really?", "Yes!", "It works?!"]
    assert marked("It works?!") == ["It works|?!"]
    assert units('"Why?" he asked.') == ['"Why?" he asked.']


def test_spans_tile_the_text_and_a_unit_without_punctuation_is_marked_at_its_end() -> None:
    text = "  First one. Second one\n\n- item  \n"
    spans = sentence_spans(text)
    assert [span.start for span in spans] == [0, *(span.end for span in spans[:-1])]
    assert spans[-1].end == len(text.rstrip())
    assert all(span.start <= span.point <= span.end for span in spans)
    assert marked(text) == ["First one|.", "Second one|", "- item|"]
    assert sentence_spans("") == [] and sentence_spans(" \n ") == []
