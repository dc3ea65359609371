"""Prompt assembly: each source shows the sentences that matter to the question under its title, and
attribution finds exactly those sentences in the prompt."""

from __future__ import annotations

from apps.answers.prompt import GAP, SYSTEM, ExcerptParams, excerpt_select, prompt_assemble, source_label
from apps.answers.types import Source
from apps.ingest.chunking import split_sentences
from apps.models.registry import generator_tokenizer
from apps.provenance.layout import layout_build
from apps.provenance.units import source_units, unit_texts

TEXT = (
    "Moss Society\n\n"
    "The Moss Society is a learned society founded in 1903. "
    "It meets in York every spring. "
    "It publishes the Journal of Moss Studies. "
    "Its first president was Gwendolyn Pryce. "
    "Members receive a newsletter. "
    "The society has 400 members."
)


def chunk(number: int, text: str, document: str = "moss/society.txt") -> Source:
    return Source(
        number, f"c{number}", "chunk", f"d{number}", document, "lab", text, "", 1.0, (), tuple(split_sentences(text))
    )


def test_a_title_line_labels_the_source_and_is_not_evidence() -> None:
    prompt = prompt_assemble(question="Who was the first president?", sources=[chunk(1, TEXT)], count_tokens=len)
    assert prompt.user.startswith("Sources:\n\n[1] Moss Society\n")
    assert source_label(chunk(1, "No title here. Just text.")) == "society"
    shown = prompt.sources[0].shown
    assert shown is not None and 0 not in shown


def test_the_sentences_that_share_the_questions_rare_words_are_shown_with_their_neighbours() -> None:
    prompt = prompt_assemble(
        question="Who was the first president of the society publishing the Journal of Moss Studies?",
        sources=[chunk(1, TEXT)],
        count_tokens=len,
    )
    source = prompt.sources[0]
    shown = [TEXT[a:b] for a, b in (source.sentences[i] for i in source.shown or ())]
    assert "It publishes the Journal of Moss Studies." in shown
    assert "Its first president was Gwendolyn Pryce." in shown
    assert "The society has 400 members." not in shown
    assert len(shown) <= ExcerptParams().most
    assert "Gwendolyn Pryce" in prompt.user and "400 members" not in prompt.user
    assert prompt.user.endswith(
        "\n\nQuestion: Who was the first president of the society publishing the Journal of Moss Studies?"
    )
    assert prompt.system == SYSTEM


def test_a_gap_mark_separates_sentences_that_do_not_follow_each_other() -> None:
    params = ExcerptParams(best=2, neighbours=0, most=2)
    sentences = ["Alpha founded Zeta.", "Nothing here.", "Nothing there.", "Zeta moved to Quorn."]
    idf = {"zeta": 1.0, "quorn": 3.0, "founde": 2.0}
    assert excerpt_select(sentences, question="Who founded Zeta, now in Quorn?", idf=idf, params=params) == (0, 3)
    text = "Zeta\n\nAlpha founded Zeta. Nothing here. Nothing there. Zeta moved to Quorn."
    prompt = prompt_assemble(
        question="Who founded Zeta, now in Quorn?", sources=[chunk(1, text)], count_tokens=len, params=params
    )
    assert f"Alpha founded Zeta.{GAP}Zeta moved to Quorn." in prompt.user


def test_attribution_finds_only_the_shown_sentences_in_the_prompt() -> None:
    prompt = prompt_assemble(question="Who was the first president?", sources=[chunk(1, TEXT)], count_tokens=len)
    stored = [source.as_dict() for source in prompt.sources]
    units = source_units(stored)
    layout = layout_build(
        tokenizer=generator_tokenizer(),
        system=prompt.system,
        user=prompt.user,
        answer="Gwendolyn Pryce",
        sources=stored,
        units=units,
    )
    shown = set(stored[0]["shown"])
    positions = layout.unit_positions()
    texts = unit_texts(stored, units)
    for unit, where, text in zip(units, positions, texts, strict=True):
        assert (where.size > 0) == (unit.index in shown)
        assert (text != "") == (unit.index in shown)
    assert stored[0]["shown"] == list(prompt.sources[0].shown or ())
