"""Fast and exact attribution with the real generator on HotpotQA copy cases (../shared/data)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from django.conf import settings

from apps.models.interfaces import Generator
from apps.models.registry import generator as load_generator
from apps.provenance import faithfulness
from apps.provenance.exact import ExactParams, exact_attribute
from apps.provenance.fast import calibrated_params, fast_attribute
from apps.provenance.types import Attribution, TokenSpan, Unit
from apps.provenance.units import unit_texts


@pytest.fixture(scope="module")
def generator() -> Generator:
    return load_generator()


@pytest.fixture(scope="module")
def cases(generator: Generator) -> list[faithfulness.Case]:
    items = faithfulness.hotpotqa_items(Path(settings.DEMO_DATA_DIR))[:4]  # not the calibration questions (50-99)

    def count(text: str) -> int:
        return len(generator.tokenizer.encode(text, add_special_tokens=False))

    return faithfulness.copy_cases(items, paragraphs=4, count_tokens=count)[:6]


def test_fast_mode_finds_the_copied_sentence_among_distractors(
    generator: Generator, cases: list[faithfulness.Case]
) -> None:
    params = calibrated_params(generator.name, settings.PROVENANCE_LEXICAL_WEIGHT)
    assert params.layer_weights, "the generator's calibration file is part of the project"
    right, total = 0.0, 0
    for case in cases:
        layout = faithfulness.case_layout(case, generator.tokenizer)
        texts = unit_texts(case.sources, layout.units)
        attribution = fast_attribute(
            model=generator.model,
            model_name=generator.name,
            layout=layout,
            answer=case.answer,
            unit_texts=texts,
            params=params,
        )
        assert case.target is not None and attribution.forward_passes == 2
        right += faithfulness.copy_accuracy(attribution, case.target) * len(attribution.tokens)
        total += len(attribution.tokens)
        assert np.allclose(attribution.scores.sum(axis=1), 1.0, atol=1e-4)
    assert total > 50 and right / total >= 0.9


def test_exact_mode_finds_the_copied_sentence_by_ablation(generator: Generator, cases: list[faithfulness.Case]) -> None:
    case = cases[0]
    layout = faithfulness.case_layout(case, generator.tokenizer)
    attribution = exact_attribute(
        model=generator.model, model_name=generator.name, layout=layout, params=ExactParams(ablations=12)
    )
    assert case.target is not None and attribution.forward_passes == 12
    assert faithfulness.copy_accuracy(attribution, case.target) >= 0.6


def _attribution(tokens: list[tuple[int, int]], best: list[int], units: int = 3) -> Attribution:
    scores = np.zeros((len(tokens), units), dtype=np.float32)
    for row, unit in enumerate(best):
        if unit >= 0:
            scores[row, unit] = 1.0
    return Attribution(
        mode="fast",
        method="attention+copy",
        model="m",
        tokens=[TokenSpan("x" * (end - start), start, end) for start, end in tokens],
        units=[Unit(0, index, 0, 1) for index in range(units)],
        scores=scores,
        forward_passes=2,
        seconds=0.0,
    )


def test_a_readers_attribution_is_compared_with_the_writers_over_the_characters_of_each_token() -> None:
    own = _attribution([(0, 5), (5, 9), (9, 12)], [0, 1, 2])  # "Gwend" "olyn" " Pr"
    proxy = _attribution([(0, 3), (3, 9), (9, 12)], [0, 1, 0])  # another tokenizer's cuts
    agreed = faithfulness.proxy_agreement(own, proxy)
    # token 1 (5-9) overlaps the reader's 3-9 (unit 1): agrees; token 0 (0-5) sums units 0 and 1: a tie, argmax 0
    assert agreed == {"tokens": 3, "top1_agreement": pytest.approx(2 / 3)}
    with pytest.raises(ValueError, match="different units"):
        faithfulness.proxy_agreement(own, _attribution([(0, 5)], [0], units=2))
