"""The generator probe: the choice by measured time against the budget, the precision by measured matrix
rate, the cached result (a fake timer stands for the candidates); and the real timing of a real model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pytest_django.fixtures import Settings

from apps.models import auto, probe
from apps.models.generator import HFGenerator

RATES = {"float32": 100.0, "bfloat16": 1.0}  # an fp32-only CPU: bf16 emulated


def fake_timer(figures: dict[str, tuple[float, float]]) -> tuple[Any, list[str]]:
    """A loader and timer that give ``figures[key]`` (prefill s, s per token); what was loaded, in order."""
    loaded: list[str] = []

    def load(key: str, precision: str) -> str:
        loaded.append(f"{key}:{precision}")
        return key

    return (load, lambda key: figures[key]), loaded


def test_the_most_accurate_candidate_that_fits_the_budget_is_chosen_and_the_rest_not_loaded() -> None:
    (load, timer), loaded = fake_timer({"qwen2.5-1.5b": (3.0, 0.1), "qwen2.5-0.5b": (1.0, 0.05)})
    fast_cpu = {"float32": 400.0, "bfloat16": 1600.0}
    result = probe.probe(budget_s=6.0, device="cpu", load=load, rates=fast_cpu, timer=timer)
    assert (result.key, result.precision) == ("qwen2.5-1.5b", "bfloat16")
    assert loaded == ["qwen2.5-1.5b:bfloat16"], "a fitting candidate ends the probe"
    assert result.timings[0].expected_s == pytest.approx(3.0 + probe.ANSWER_TOKENS * 0.1)
    assert "most accurate" in result.reason and "6 s budget" in result.reason


def test_a_candidate_estimated_far_over_the_budget_is_not_loaded() -> None:
    (load, timer), loaded = fake_timer({"qwen2.5-0.5b": (4.0, 0.1)})
    result = probe.probe(budget_s=6.0, device="cpu", load=load, rates=RATES, timer=timer)
    skipped, measured = result.timings
    assert measured.measured
    assert skipped.key == "qwen2.5-1.5b" and not skipped.measured and skipped.estimated_s > 12
    assert "not loaded" in skipped.note and "float32" in skipped.note
    assert loaded == ["qwen2.5-0.5b:float32"] and result.key == "qwen2.5-0.5b"
    assert "qwen2.5-1.5b would take longer" in result.reason


def test_when_nothing_fits_the_fastest_is_chosen_and_said_so() -> None:
    (load, timer), _ = fake_timer({"qwen2.5-1.5b": (9.0, 0.3), "qwen2.5-0.5b": (7.0, 0.2)})
    result = probe.probe(budget_s=2.0, device="cpu", load=load, rates={"float32": 1e6, "bfloat16": 1.0}, timer=timer)
    assert result.key == "qwen2.5-0.5b" and result.reason.startswith("no candidate fits the 2 s budget")


def test_bf16_only_where_it_measures_faster() -> None:
    assert probe.fastest_precision({"float32": 100.0, "bfloat16": 1.0}, "cpu") == "float32"
    assert probe.fastest_precision({"float32": 100.0, "bfloat16": 120.0}, "cpu") == "float32"
    assert probe.fastest_precision({"float32": 100.0, "bfloat16": 380.0}, "cpu") == "bfloat16"
    assert probe.fastest_precision({"float32": 1.0, "float16": 9.0}, "cuda") == "float16"
    assert probe.matmul_gflops("float32", "cpu", repeats=1) > 0


def test_the_result_is_kept_per_machine_and_read_back(tmp_path: Path, settings: Settings) -> None:
    settings.MODEL_CACHE_DIR = tmp_path
    settings.ANSWER_BUDGET_S = 6.0
    (load, timer), _ = fake_timer({"qwen2.5-0.5b": (2.0, 0.05)})
    result = probe.stamped(
        probe.probe(budget_s=6.0, device="cpu", load=load, rates=RATES, timer=timer), probe.machine_fingerprint("cpu")
    )
    path = auto.result_path("cpu", tmp_path, 6.0)
    assert path.parent == tmp_path / "probe" and auto.auto_result("cpu") is None
    probe.probe_write(path, result)
    auto._missing_since.clear()
    assert auto.auto_result("cpu") == probe.probe_read(path) == result
    assert result.machine["cores"] >= 1 and result.measured_at
    assert auto.result_path("cpu", tmp_path, 3.0) != path, "another budget is another result"


def test_a_real_model_is_timed(smollm2: HFGenerator) -> None:
    prefill, per_token = probe.time_candidate(smollm2, prompt_tokens=64)
    assert 0 < prefill < 30 and 0 < per_token < 5
