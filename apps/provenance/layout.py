"""Where each unit of each source sits in the generator's input, token by token.

The prompt is rendered with the generator's chat template and tokenized with character
offsets; every prompt token inside a unit's text is marked with that unit's index (-1
elsewhere: instructions, headers, the question). The answer is tokenized the same way, with
its offsets in the answer text, so each answer token can be scored against the units.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from transformers import PreTrainedTokenizerBase

from apps.models.chat import chat_messages
from apps.provenance.types import Attribution, TokenSpan, Unit
from apps.provenance.units import unit_shown


class LayoutError(ValueError):
    """The prompt does not contain a source's text where the answer says it does."""


@dataclass(frozen=True)
class Layout:
    prompt_ids: list[int]
    unit_of_token: npt.NDArray[np.int32]  # per prompt token: the unit it belongs to, or -1
    answer_ids: list[int]
    answer_tokens: list[TokenSpan]
    units: list[Unit]

    def unit_positions(self) -> list[npt.NDArray[np.int64]]:
        """For each unit, the prompt positions of its tokens."""
        return [np.flatnonzero(self.unit_of_token == index) for index in range(len(self.units))]


def _rendered(tokenizer: PreTrainedTokenizerBase, system: str, user: str) -> str:
    rendered = tokenizer.apply_chat_template(chat_messages(user, system), add_generation_prompt=True, tokenize=False)
    if not isinstance(rendered, str):
        raise TypeError("the chat template did not render to text")
    return rendered


def _shown_spans(user: str, sources: Sequence[dict[str, Any]], units: Sequence[Unit]) -> list[tuple[int, int]]:
    """Each unit's span in a prompt that shows only some sentences of each source (``shown``), in
    order: a unit not shown has the empty span (0, 0) and so no prompt token."""
    cursor = 0
    spans = []
    for unit in units:
        source = sources[unit.source]
        if not unit_shown(source, unit):
            spans.append((0, 0))
            continue
        text = (source.get("text") or "")[unit.start : unit.end].strip()
        found = user.find(text, cursor) if text else cursor
        if found < 0:
            raise LayoutError(f"a sentence of source {unit.source + 1} is not in the prompt")
        spans.append((found, found + len(text)))
        cursor = found + len(text)
    return spans


def _unit_spans(user: str, sources: Sequence[dict[str, Any]], units: Sequence[Unit]) -> list[tuple[int, int]]:
    """Each unit's character span in the user message (sources appear in order, stripped)."""
    if any("shown" in source for source in sources):
        return _shown_spans(user, sources, units)
    cursor = 0
    bases: dict[int, tuple[int, int]] = {}
    for position, source in enumerate(sources):
        text = source.get("text") or ""
        stripped = text.strip()
        found = user.find(stripped, cursor) if stripped else cursor
        if found < 0:
            raise LayoutError(f"source {position + 1} is not in the prompt")
        lead = len(text) - len(text.lstrip())
        bases[position] = (found - lead, len(stripped) + lead)
        cursor = found + len(stripped)
    spans = []
    for unit in units:
        base, limit = bases[unit.source]
        start, end = max(unit.start, 0), min(unit.end, limit)
        spans.append((base + start, base + max(start, end)))
    return spans


def _tokens_with_offsets(tokenizer: PreTrainedTokenizerBase, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return list(encoded["input_ids"]), [(int(a), int(b)) for a, b in encoded["offset_mapping"]]


def layout_build(
    *,
    tokenizer: PreTrainedTokenizerBase,
    system: str,
    user: str,
    answer: str,
    sources: Sequence[dict[str, Any]],
    units: Sequence[Unit],
) -> Layout:
    """The prompt and answer token ids, each prompt token's unit and each answer token's span."""
    rendered = _rendered(tokenizer, system, user)
    offset = rendered.find(user)
    if offset < 0:
        raise LayoutError("the chat template changed the prompt text")
    prompt_ids, prompt_offsets = _tokens_with_offsets(tokenizer, rendered)
    unit_of_token = np.full(len(prompt_ids), -1, dtype=np.int32)
    starts = np.array([start for start, _ in prompt_offsets])
    ends = np.array([end for _, end in prompt_offsets])
    for index, (start, end) in enumerate(_unit_spans(user, sources, units)):
        if end <= start:
            continue
        inside = (starts < offset + end) & (ends > offset + start) & (ends > starts)
        unit_of_token[inside & (unit_of_token < 0)] = index
    answer_ids, answer_offsets = _tokens_with_offsets(tokenizer, answer)
    answer_tokens = [TokenSpan(answer[a:b], a, b) for a, b in answer_offsets]
    return Layout(prompt_ids, unit_of_token, answer_ids, answer_tokens, list(units))


Scoring = Callable[[], tuple[npt.NDArray[np.float32], int]]


def layout_attribution(*, layout: Layout, mode: str, method: str, model: str, score: Scoring) -> Attribution:
    """An attribution over the layout's answer tokens and units, timed. ``score`` returns the
    (answer tokens, units) scores and the forward passes it took; it is only called when there
    are answer tokens and units (otherwise every score is 0, with no passes)."""
    started = time.perf_counter()
    if layout.answer_ids and layout.units:
        scores, passes = score()
    else:
        scores = np.zeros((len(layout.answer_tokens), len(layout.units)), dtype=np.float32)
        passes = 0
    return Attribution(
        mode=mode,
        method=method,
        model=model,
        tokens=list(layout.answer_tokens),
        units=list(layout.units),
        scores=scores,
        forward_passes=passes,
        seconds=time.perf_counter() - started,
    )
