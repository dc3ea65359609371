"""The answer as users read it: labels and echoed source headers removed, the short answer first."""

from __future__ import annotations

from apps.answers.answer_text import answer_clean, short_answer


def test_labels_and_echoed_headers_are_removed() -> None:
    assert answer_clean("Answer: Leeds\nSupport: She was born in Leeds [2].") == "Leeds\nShe was born in Leeds [2]."
    assert answer_clean("The answer to this question is: 1889") == "1889"
    assert answer_clean("[1] (table row from towers.csv) Paris\n\nIt is in France.") == "Paris\nIt is in France."


def test_the_short_answer_is_the_first_line_without_markers_or_full_stop() -> None:
    assert short_answer("Gwendolyn Pryce [1].\nShe was its first president [1].") == "Gwendolyn Pryce"
    assert short_answer("Short answer: E. W. Scripps\nHe founded it.") == "E. W. Scripps"
    assert short_answer("") == ""
