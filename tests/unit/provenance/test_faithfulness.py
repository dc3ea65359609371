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
        model=generator.model, model_name=generator.name, layout=layout, params=ExactParams(ablations=24)
    )
    assert case.target is not None and attribution.forward_passes == 24
    assert faithfulness.copy_accuracy(attribution, case.target) >= 0.6
