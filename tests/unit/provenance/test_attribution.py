"""Token attribution's parts: units, prompt layout, copied spans, the ablation surrogate, citations, storage."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
from django.conf import settings

from apps.answers.prompt import prompt_assemble
from apps.answers.types import Source
from apps.models.interfaces import Generator
from apps.models.registry import generator_tokenizer
from apps.provenance.citations import cite, token_offsets
from apps.provenance.exact import ExactAttributor, ExactParams, ablation_masks, agreement, surrogate_scores
from apps.provenance.fast import FastAttributor, copy_scores
from apps.provenance.layout import layout_build
from apps.provenance.services import attributor
from apps.provenance.storage import answer_tokens, attribution_pack, attribution_unpack
from apps.provenance.types import FAST, Attribution, TokenSpan, Unit
from apps.provenance.units import source_units

CHUNK = "The Eiffel Tower is in Paris. It was finished in 1889. It is made of iron."
ROW = "Towers / heights, row 2: name: Eiffel Tower; height: 330 m; city: Paris."


def sources() -> list[dict[str, Any]]:
    chunk = Source(1, "c1", "chunk", "d1", "towers.txt", "", CHUNK, "", 1.0, (), ((0, 29), (30, 54), (55, 74)))
    row = Source(2, "r1", "row", "d2", "heights.csv", "", ROW, "", 0.5, ())
    image = Source(3, "i1", "image", "d3", "tower.jpg", "", "steel arch bridge, tower", "tower.jpg", 0.2, ())
    return [s.as_dict() for s in (chunk, row, image)]


def test_units_are_sentences_cells_and_whole_image_texts() -> None:
    units = source_units(sources())
    assert [(u.source, u.index) for u in units] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 0)]
    assert CHUNK[units[1].start : units[1].end] == "It was finished in 1889."
    cells = [ROW[u.start : u.end] for u in units if u.source == 1]
    assert cells == ["name: Eiffel Tower", "height: 330 m", "city: Paris"]
    assert [u.label for u in units if u.source == 1] == ["name", "height", "city"]
    assert units[-1].start == 0 and units[-1].end == len("steel arch bridge, tower")


def test_layout_marks_the_prompt_tokens_of_every_unit() -> None:
    tokenizer = generator_tokenizer()
    items = sources()
    objects = [
        Source(i + 1, s["id"], s["kind"], "", s["document"], "", s["text"], "", 1.0, ()) for i, s in enumerate(items)
    ]
    prompt = prompt_assemble(question="When was it finished?", sources=objects, count_tokens=lambda t: len(t))
    units = source_units(items)
    layout = layout_build(
        tokenizer=tokenizer, system=prompt.system, user=prompt.user, answer="In 1889.", sources=items, units=units
    )
    text = tokenizer.decode([layout.prompt_ids[i] for i in layout.unit_positions()[1]])
    assert "finished in 1889" in text and "Paris" not in text
    assert "height: 330" in tokenizer.decode([layout.prompt_ids[i] for i in layout.unit_positions()[4]])
    assert "".join(t.text for t in layout.answer_tokens) == "In 1889."
    assert (layout.unit_of_token >= 0).sum() < len(layout.prompt_ids)  # headers and question belong to none


def test_copied_runs_point_at_the_unit_that_contains_them() -> None:
    answer = "It was finished in 1889, they say."
    tokens = [TokenSpan(w, answer.index(w), answer.index(w) + len(w)) for w in answer.replace(",", " ,").split()]
    scores = copy_scores(answer, tokens, ["It is made of iron.", "it was  finished in 1889."], min_copy=3)
    assert scores[:5, 1].tolist() == [1.0] * 5 and scores[:5, 0].tolist() == [0.0] * 5
    assert scores[5:].sum() == 0.0  # "they say" is copied from nowhere


def test_the_ablation_surrogate_finds_the_unit_a_token_depends_on() -> None:
    masks = ablation_masks(6, ExactParams(ablations=40, seed=3))
    assert masks[0].all()
    rng = np.random.default_rng(0)
    targets = np.stack([-4.0 + 3.0 * masks[:, 2], -2.0 + 2.5 * masks[:, 4] + 0.5 * masks[:, 1]], axis=1)
    targets = (targets + rng.normal(0, 0.05, targets.shape)).astype(np.float32)
    scores = surrogate_scores(masks, targets, alpha=0.01)
    assert scores.shape == (2, 6)
    assert scores[0].argmax() == 2 and scores[1].argmax() == 4 and scores[1, 1] > scores[1, 0]


def attribution(scores: list[list[float]], answer: str, units: list[Unit]) -> Attribution:
    words, spans, at = answer.split(" "), [], 0
    for word in words:
        spans.append(TokenSpan(word, at, at + len(word)))
        at += len(word) + 1
    return Attribution(FAST, "test", "model", spans, units, np.asarray(scores, dtype=np.float32), 2, 0.01)


def test_citations_follow_the_token_scores_not_the_models_markers() -> None:
    units = source_units(sources())
    answer = "Finished in 1889 [3]. Built of iron."
    scores = [[0, 0.9, 0, 0.1, 0, 0, 0]] * 4 + [[0, 0, 0.8, 0, 0, 0, 0.2]] * 3
    att = attribution(scores, answer, units)
    cited = cite(answer, att)
    assert cited.text == "Finished in 1889 [1]. Built of iron. [1]"  # "iron." is one token here
    assert [c["sources"] for c in cited.citations] == [[1], [1]]
    # the model's own "[3]" is gone (its token keeps only the period), the others moved past the markers
    texts = [None if span is None else cited.text[span[0] : span[1]] for span in cited.token_offsets]
    assert texts == ["Finished", "in", "1889", ".", "Built", "of", "iron."]
    assert cited.token_offsets[6] == (31, 36)
    assert cite("[2]", attribution([[0, 1, 0, 0, 0, 0, 0]], "[2]", units)).token_offsets == [None]
    assert token_offsets(answer, att.tokens, cited.insertions) == cited.token_offsets
    mixed = [[0, 0.5, 0, 0.45, 0, 0, 0]] * 7
    assert cite(answer, attribution(mixed, answer, units)).citations[0]["sources"] == [1, 2]


def test_storage_round_trip_gives_the_tokens_of_ask_json() -> None:
    items = sources()
    units = source_units(items)
    answer = "Paris , 330 m"
    scores: list[list[float]] = [
        [0.7, 0, 0, 0, 0, 0.3, 0],
        [0, 0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0.9, 0.05, 0.05],
        [0, 0, 0, 0, 1, 0, 0],
    ]
    att = attribution(scores, answer, units)
    payload = attribution_pack(att, offset_map=[(t.start, t.end) for t in att.tokens])
    tokens = answer_tokens(attribution_unpack(payload), answer=answer, sources=items)
    assert [t["text"] for t in tokens] == ["Paris", ",", "330", "m"]
    assert tokens[0]["sources"][0] == {"id": "c1", "number": 1, "sentence": 0, "start": 0, "end": 29, "score": 0.7}
    assert tokens[0]["sources"][1]["id"] == "r1" and tokens[0]["sources"][1]["column"] == "city"
    assert tokens[1]["sources"] == []
    assert [s["score"] for s in tokens[2]["sources"]] == pytest.approx([0.9, 0.05, 0.05])
    assert len(payload) < 300


def test_agreement_counts_tokens_both_modes_attribute() -> None:
    units = source_units(sources())
    fast = attribution([[1, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0], [0] * 7], "a b c", units)
    exact = attribution([[0.9, 0.1, 0, 0, 0, 0, 0], [0.6, 0.3, 0.1, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0]], "a b c", units)
    assert agreement(fast, exact) == {"tokens": 2, "top1_agreement": 0.5, "top1_in_exact_top3": 1.0}


def test_each_mode_has_its_attributor_and_an_uncalibrated_model_gets_uniform_layers() -> None:
    named = cast(Generator, SimpleNamespace(name="a-model-without-calibration"))
    fast = attributor(FAST, named)
    assert isinstance(fast, FastAttributor) and fast.mode == "fast" and fast.params.layer_weights == ()
    calibrated = attributor(FAST, cast(Generator, SimpleNamespace(name="SmolLM2-135M-Instruct")))
    assert isinstance(calibrated, FastAttributor) and len(calibrated.params.layer_weights) == 30
    exact = attributor("exact", named)
    assert isinstance(exact, ExactAttributor) and exact.params.ablations == settings.PROVENANCE_EXACT_ABLATIONS
    with pytest.raises(ValueError, match="unknown attribution mode"):
        attributor("approximate", named)
