"""Fast attribution (always on): the generator's own attention over the prompt, plus copied spans.

One forward pass over the answer, with the prompt in the key/value cache, returns every
layer's attention from the position that produced each answer token. Per token, a unit's
attention score is the attention mass on its prompt tokens, averaged over heads and over
layers with per-layer weights (uniform unless the model has a calibration,
``apps/provenance/calibration/<model>.json``, written by ``benchmarks/attribution_calibrate.py``),
divided by ``length ** length_power`` and normalised over the units.

Copied spans: a run of at least ``min_copy`` answer tokens found verbatim (case and spacing
aside) in a unit links each of its tokens to that unit, in proportion to the run's length.
The two are mixed as ``(1 - lexical_weight) * attention + lexical_weight * copy``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from apps.models.interfaces import Generator
from apps.provenance.layout import Layout, layout_attribution
from apps.provenance.types import FAST, Attribution, TokenSpan

CALIBRATION_DIR = Path(__file__).resolve().parent / "calibration"
METHOD = "attention+copy"


@dataclass(frozen=True)
class FastParams:
    layer_weights: tuple[float, ...] = ()  # one per layer; empty: uniform
    length_power: float = 0.0
    lexical_weight: float = 0.5
    min_copy: int = 3


def calibrated_params(model_name: str, lexical_weight: float) -> FastParams:
    """The model's calibrated layer weights and length power, when a calibration file exists."""
    path = CALIBRATION_DIR / f"{model_name}.json"
    if not path.exists():
        return FastParams(lexical_weight=lexical_weight)
    data = json.loads(path.read_text())
    return FastParams(
        layer_weights=tuple(float(w) for w in data["layer_weights"]),
        length_power=float(data.get("length_power", 0.0)),
        lexical_weight=lexical_weight,
    )


@contextmanager
def eager_attention(model: Any) -> Iterator[None]:
    """Attention weights are only returned by the eager implementation; switch for the duration."""
    previous = model.config._attn_implementation
    if previous != "eager":
        model.set_attn_implementation("eager")
    try:
        yield
    finally:
        if previous != "eager":
            model.set_attn_implementation(previous)


def layer_attention(model: Any, layout: Layout, past: Any = None) -> npt.NDArray[np.float32]:
    """(layers, answer tokens, prompt tokens): head-averaged attention from the position that
    produced each answer token to every prompt token. ``past``, the keys and values of all prompt
    tokens but the last (what generation computed), saves the prefill."""
    import torch

    prompt, answer = layout.prompt_ids, layout.answer_ids
    device = model.device
    with torch.inference_mode():
        if past is not None and past.get_seq_length() == len(prompt) - 1:
            cache = past
        else:
            cache = model(torch.tensor([prompt[:-1]], device=device), use_cache=True, logits_to_keep=1).cache
        queries = torch.tensor([[prompt[-1], *answer[:-1]]], device=device)
        with eager_attention(model):
            output = model(queries, cache=cache, use_cache=True, output_attentions=True, logits_to_keep=1)
    layers = [attention[0, :, :, : len(prompt)].float().mean(dim=0) for attention in output.attentions]
    return torch.stack(layers).cpu().numpy().astype(np.float32)


def unit_attention(attention: npt.NDArray[np.float32], layout: Layout, params: FastParams) -> npt.NDArray[np.float32]:
    """(answer tokens, units): the layer-weighted attention mass on each unit, normalised per token."""
    layers = attention.shape[0]
    weights = np.asarray(params.layer_weights or [1.0] * layers, dtype=np.float32)
    if weights.shape[0] != layers:
        raise ValueError(f"the calibration has {weights.shape[0]} layer weights, the model {layers} layers")
    mixed = np.tensordot(weights / weights.sum(), attention, axes=1)  # (answer, prompt)
    scores = np.zeros((mixed.shape[0], len(layout.units)), dtype=np.float32)
    for unit, positions in enumerate(layout.unit_positions()):
        if positions.size:
            scores[:, unit] = mixed[:, positions].sum(axis=1) / positions.size**params.length_power
    return normalised(scores)


def normalised(scores: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    totals = scores.sum(axis=1, keepdims=True)
    return np.divide(scores, totals, out=np.zeros_like(scores), where=totals > 0)


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def copy_scores(
    answer: str, tokens: Sequence[TokenSpan], unit_texts: Sequence[str], min_copy: int
) -> npt.NDArray[np.float32]:
    """(answer tokens, units): for each token, the length of the longest verbatim run through it
    that a unit contains (runs shorter than ``min_copy`` tokens count 0), normalised per token."""
    scores = np.zeros((len(tokens), len(unit_texts)), dtype=np.float32)
    texts = [_norm(text) for text in unit_texts]
    for unit, text in enumerate(texts):
        if not text:
            continue
        start = 0
        while start < len(tokens):
            end = start + 1
            while end <= len(tokens) and _norm(answer[tokens[start].start : tokens[end - 1].end]) in text:
                end += 1
            run = end - 1 - start
            if run >= min_copy:
                scores[start : end - 1, unit] = np.maximum(scores[start : end - 1, unit], run)
                start = end - 1
            else:
                start += 1
    return normalised(scores)


def fast_attribute(
    *,
    model: Any,
    model_name: str,
    layout: Layout,
    answer: str,
    unit_texts: Sequence[str],
    params: FastParams,
    past: Any = None,
) -> Attribution:
    """Fast-mode scores for every answer token (one extra forward pass over the answer, and one over
    the prompt unless ``past`` holds it)."""

    def score() -> tuple[npt.NDArray[np.float32], int]:
        attention = unit_attention(layer_attention(model, layout, past), layout, params)
        copied = copy_scores(answer, layout.answer_tokens, unit_texts, params.min_copy)
        has_copy = copied.sum(axis=1, keepdims=True) > 0
        weight = np.where(has_copy, params.lexical_weight, 0.0).astype(np.float32)
        return ((1 - weight) * attention + weight * copied).astype(np.float32), 2

    return layout_attribution(layout=layout, mode=FAST, method=METHOD, model=model_name, score=score)


@dataclass(frozen=True)
class FastAttributor:
    """``Attributor`` of fast mode."""

    params: FastParams
    mode: str = FAST
    method: str = METHOD

    def attribute(self, *, generator: Generator, layout: Layout, answer: str, unit_texts: Sequence[str]) -> Attribution:
        prompt_past = getattr(generator, "prompt_past", None)  # what the generation computed, when it can lend it
        return fast_attribute(
            model=generator.model,
            model_name=generator.name,
            layout=layout,
            answer=answer,
            unit_texts=unit_texts,
            params=self.params,
            past=prompt_past(layout.prompt_ids) if prompt_past is not None else None,
        )
