"""Exact attribution (on demand): context ablation with a sparse linear surrogate, after ContextCite.

``ablations`` times, each unit is kept with probability ``keep`` (the first run keeps them
all) and the units left out are removed from the prompt, token by token; one teacher-forced
forward pass gives the log-probability of every answer token under that context. A Lasso
fitted per answer token on the keep/remove masks, with the logit of each token's probability
as target, gives each unit's effect on that token; the positive effects, normalised per token,
are the exact-mode scores. Cost: ``ablations`` forward passes over prompt and answer.

The answer is scored by the generator here, or (``PROVENANCE_EXACT_ENGINE``) by the engine server that wrote
it, from the log-probabilities it returns (``apps.models.server_logprobs``); the method then names it.

A ``progress`` callable, when given, is called after every pass with (passes done, passes in all);
it may raise ``AttributionCancelled`` to stop before the next pass (nothing is stored then).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from apps.models.interfaces import Generator
from apps.models.server_logprobs import AnswerScorer
from apps.provenance.fast import normalised
from apps.provenance.layout import Layout, layout_attribution
from apps.provenance.types import EXACT, Attribution

METHOD = "ablation+lasso"

Progress = Callable[[int, int], None]


class AttributionCancelled(Exception):
    """Raised by a ``Progress`` callable to stop an exact attribution between two passes."""


@dataclass(frozen=True)
class ExactParams:
    ablations: int = 32
    keep: float = 0.5
    alpha: float = 0.01
    seed: int = 0


def ablation_masks(units: int, params: ExactParams) -> npt.NDArray[np.bool_]:
    rng = np.random.default_rng(params.seed)
    masks = rng.random((params.ablations, units)) < params.keep
    masks[0] = True
    return masks


Scorer = Callable[[Sequence[int], Sequence[int]], npt.NDArray[np.float32]]
"""(prompt token ids, answer token ids) -> the log-probability of each answer token, in order."""


def model_scorer(model: Any) -> Scorer:
    """``Scorer`` of a white-box model here: one teacher-forced forward pass over prompt and answer."""

    def score(prompt: Sequence[int], answer: Sequence[int]) -> npt.NDArray[np.float32]:
        import torch

        ids = torch.tensor([[*prompt, *answer]], device=model.device)
        with torch.inference_mode():
            logits = model(ids, logits_to_keep=len(answer) + 1).logits[0, :-1].float()
        logprobs = torch.log_softmax(logits, dim=-1)
        chosen = logprobs.gather(1, torch.tensor(list(answer), device=model.device)[:, None])[:, 0]
        return chosen.cpu().numpy().astype(np.float32)

    return score


def answer_logits(score: Scorer, layout: Layout, keep: npt.NDArray[np.bool_]) -> npt.NDArray[np.float32]:
    """The logit of each answer token's probability with only the kept units in the prompt."""
    unit_of_token = layout.unit_of_token
    kept = (unit_of_token < 0) | keep[np.maximum(unit_of_token, 0)]
    prompt = [token for token, stays in zip(layout.prompt_ids, kept, strict=True) if stays]
    chosen = np.minimum(score(prompt, layout.answer_ids).astype(np.float64), -1e-6)  # log p < 0: a finite logit
    return (chosen - np.log1p(-np.exp(chosen))).astype(np.float32)


def surrogate_scores(
    masks: npt.NDArray[np.bool_], targets: npt.NDArray[np.float32], alpha: float
) -> npt.NDArray[np.float32]:
    """(answer tokens, units): the positive Lasso weights of each unit for each token, normalised."""
    from sklearn.linear_model import Lasso

    surrogate = Lasso(alpha=alpha, max_iter=5000)
    surrogate.fit(masks.astype(np.float32), targets)
    weights = np.atleast_2d(surrogate.coef_).astype(np.float32)
    return normalised(np.clip(weights, 0.0, None))


def ablation_targets(
    score: Scorer, layout: Layout, masks: npt.NDArray[np.bool_], progress: Progress | None
) -> npt.NDArray[np.float32]:
    """(ablations, tokens): one scoring of the answer per mask, ``progress`` told after each."""
    rows = []
    for mask in masks:
        rows.append(answer_logits(score, layout, mask))
        if progress is not None:
            progress(len(rows), len(masks))
    return np.stack(rows)


def exact_attribute(
    *,
    model: Any,
    model_name: str,
    layout: Layout,
    params: ExactParams,
    progress: Progress | None = None,
    scorer: AnswerScorer | None = None,
) -> Attribution:
    """Exact scores of ``layout``'s answer; the answer is scored by ``model`` here, or by ``scorer`` (an
    engine server's log-probabilities, named in the method)."""
    score = model_scorer(model) if scorer is None else scorer.logprobs
    method = METHOD if scorer is None else f"{METHOD} via {scorer.name}"

    def run() -> tuple[npt.NDArray[np.float32], int]:
        masks = ablation_masks(len(layout.units), params)
        targets = ablation_targets(score, layout, masks, progress)
        return surrogate_scores(masks, targets, params.alpha), params.ablations

    return layout_attribution(layout=layout, mode=EXACT, method=method, model=model_name, score=run)


@dataclass(frozen=True)
class ExactAttributor:
    """``Attributor`` of exact mode (the answer's text and the units' texts are not needed: the
    model's probabilities under ablated prompts are), scored here or through ``scorer``."""

    params: ExactParams
    mode: str = EXACT
    method: str = METHOD
    progress: Progress | None = None
    scorer: AnswerScorer | None = None

    def attribute(self, *, generator: Generator, layout: Layout, answer: str, unit_texts: Sequence[str]) -> Attribution:
        return exact_attribute(
            model=generator.model,
            model_name=generator.name,
            layout=layout,
            params=self.params,
            progress=self.progress,
            scorer=self.scorer,
        )


def agreement(fast: Attribution, exact: Attribution) -> dict[str, float]:
    """How often the two modes name the same best unit, over the tokens both attribute."""
    both = (fast.scores.sum(axis=1) > 0) & (exact.scores.sum(axis=1) > 0)
    if not both.any():
        return {"tokens": 0, "top1_agreement": 0.0, "top1_in_exact_top3": 0.0}
    fast_top = fast.scores[both].argmax(axis=1)
    exact_rank = np.argsort(-exact.scores[both], axis=1)
    return {
        "tokens": int(both.sum()),
        "top1_agreement": float((fast_top == exact_rank[:, 0]).mean()),
        "top1_in_exact_top3": float(
            np.mean([top in ranks[:3] for top, ranks in zip(fast_top, exact_rank, strict=True)])
        ),
    }
