"""The values token attribution works with: the attributable units of an answer's sources,
the answer's tokens, and a (tokens x units) score matrix with the method that made it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from apps.models.interfaces import Generator
    from apps.provenance.layout import Layout

FAST = "fast"
EXACT = "exact"


@dataclass(frozen=True)
class Unit:
    """An attributable piece of a source: a sentence of a chunk, a cell of a table row, or an
    image's whole text. ``start``/``end`` are character offsets into the source's text."""

    source: int  # position of the source in the answer's sources (0-based; its number is source + 1)
    index: int  # sentence (or cell) index inside the source
    start: int
    end: int
    label: str = ""  # a cell's column


@dataclass(frozen=True)
class TokenSpan:
    """One token of the generated answer: its text and character offsets in the answer."""

    text: str
    start: int
    end: int


@dataclass
class Attribution:
    """Per answer token, a score for every unit (rows: tokens, columns: units)."""

    mode: str  # fast or exact
    method: str
    model: str
    tokens: list[TokenSpan]
    units: list[Unit]
    scores: npt.NDArray[np.float32]
    forward_passes: int
    seconds: float

    def top(self, token: int, k: int) -> list[tuple[int, float]]:
        """The ``k`` best (unit index, score) of one token, best first; units scoring 0 are left out."""
        row = self.scores[token]
        order = np.argsort(-row, kind="stable")[:k]
        return [(int(unit), float(row[unit])) for unit in order if row[unit] > 0]


class Attributor(Protocol):
    """A token attribution method: with the generator that wrote ``answer``, a score for every
    answer token against every unit of the prompt (``layout``). ``mode`` and ``method`` are stored
    with each record, with the model's name."""

    @property
    def mode(self) -> str: ...

    @property
    def method(self) -> str: ...

    def attribute(
        self, *, generator: Generator, layout: Layout, answer: str, unit_texts: Sequence[str]
    ) -> Attribution: ...
