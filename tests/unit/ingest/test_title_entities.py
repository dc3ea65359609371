"""A document's title names an entity its first chunk is about (graph_build.title_name, add_knowledge)."""

from __future__ import annotations

from typing import Any

from apps.graph.identity import TITLE_LABEL, entity_id, entity_key
from apps.ingest.graph_build import add_knowledge, build_structure, title_name
from apps.ingest.types import Extraction, Mention, ParsedDocument, TextChunk


def test_title_name_drops_a_disambiguation_and_refuses_what_is_no_name() -> None:
    assert title_name("Polish-Russian War (film)", "2wiki/Polish-Russian War (film).txt") == "Polish-Russian War"
    assert title_name("  Blue   Velvet ", "a.txt") == "Blue Velvet"
    assert title_name("(1999 film)", "a.txt") == "(1999 film)"  # nothing but the parenthetical: kept whole
    assert title_name("report_2023", "docs/report_2023.pdf") == ""  # a file name, not a title
    assert title_name("Blue Velvet", "films/Blue Velvet.txt") == "Blue Velvet"  # a file named after its title
    assert title_name("The cat sat on the mat.", "a.txt") == ""  # a sentence
    assert title_name("all lower case words", "a.txt") == ""
    assert title_name(" ".join(["Word"] * 13), "a.txt") == ""
    assert title_name("", "a.txt") == ""


def _document(
    title: str, text: str, mentions: tuple[Mention, ...]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    parsed = ParsedDocument(
        path="w/page.txt", mime="text/plain", sha256="ab" * 32, size=len(text), text=text, title=title
    )
    first_break = text.index("\n\n")
    chunk = TextChunk(0, text, 0, len(text), ((0, first_break), (first_break + 2, len(text))))
    graph, units = build_structure(parsed=parsed, collection="c", chunks=[chunk], images=[])
    extraction = Extraction(mentions=mentions, sentences=chunk.sentences)
    add_knowledge(graph=graph, units=units, extractions=[extraction])
    return graph.entities, graph.mentions.get("Chunk", []), graph.chunks


def test_a_title_the_extractor_missed_becomes_an_entity_the_first_chunk_mentions_in_its_first_sentence() -> None:
    text = "Polish-Russian War (film)\n\nPolish-Russian War is a 2009 film directed by Xawery Żuławski."
    at = text.index("Xawery")
    person = Mention(at, at + 15, "Xawery Żuławski", "PERSON", entity_key("Xawery Żuławski", "PERSON"))
    entities, mentions, chunks = _document("Polish-Russian War (film)", text, (person,))
    title = next(entity for entity in entities if entity["type"] == TITLE_LABEL)
    assert title["id"] == entity_id(entity_key("Polish-Russian War", TITLE_LABEL))
    assert title["name"] == "Polish-Russian War" and title["aliases"] == ["Polish-Russian War (film)"]
    mention = next(m for m in mentions if m["entity"] == title["id"])
    assert mention["unit"] == chunks[0]["id"] and mention["sentence"] == 0
    assert text[mention["start"] : mention["end"]] == "Polish-Russian War"
    assert {entity["type"] for entity in entities} == {TITLE_LABEL, "PERSON"}


def test_a_title_the_extractor_tagged_still_gets_its_title_entity() -> None:
    text = "Ada Lovelace\n\nAda Lovelace was a mathematician."
    found = Mention(0, 12, "Ada Lovelace", "PERSON", entity_key("Ada Lovelace", "PERSON"))
    entities, mentions, _ = _document("Ada Lovelace", text, (found,))
    assert sorted(entity["type"] for entity in entities) == ["PERSON", TITLE_LABEL]
    assert len(mentions) == 2


def test_chunk_spans_become_title_link_rows_one_per_entity() -> None:
    text = "Drew Fuller\n\nDrew Fuller starred in Charmed. Charmed ran on The WB."
    graph, units = build_structure(
        parsed=ParsedDocument(
            path="d.txt", mime="text/plain", sha256="cd" * 32, size=1, text=text, title="Drew Fuller"
        ),
        collection="c",
        chunks=[TextChunk(0, text, 0, len(text), ((0, 11), (13, 44), (45, len(text))))],
        images=[],
    )
    add_knowledge(graph=graph, units=units, extractions=[Extraction(sentences=((0, 11), (13, 44), (45, len(text))))])
    charmed = entity_id(entity_key("Charmed", TITLE_LABEL))
    links = [row for row in graph.title_links if row["entity"] == charmed]
    assert len(links) == 1 and text[links[0]["start"] : links[0]["end"]] == "Charmed" and links[0]["sentence"] == 1
    assert graph.titles == [
        {"id": entity_id(entity_key("Drew Fuller", TITLE_LABEL)), "name": "Drew Fuller", "query": '"Drew Fuller"'}
    ]


def test_a_document_whose_title_is_its_file_name_gets_no_title_entity() -> None:
    entities, mentions, _ = _document("page", "page\n\nsome text without names.", ())
    assert entities == [] and mentions == []


def test_entity_cleaning_drops_what_names_nothing_and_fixes_types_the_words_give_away() -> None:
    from apps.ingest.extraction import entity_clean

    assert entity_clean("MALE", "ORG") is None
    assert entity_clean("He", "PERSON") is None
    assert entity_clean("'", "PERSON") is None and entity_clean("1990", "PERSON") is None
    assert entity_clean("Club Norway", "PERSON") == "ORG"
    assert entity_clean("Manchester United", "PERSON") == "ORG"
    assert entity_clean("University of Oslo", "GPE") == "ORG"
    assert entity_clean("Hudson River", "ORG") == "LOC"
    assert entity_clean("Ada Lovelace", "PERSON") == "PERSON"
    assert entity_clean("Club", "PERSON") == "PERSON"  # one word: no type from it
    assert entity_clean("1990", "DATE") == "DATE"  # only name types are cleaned
