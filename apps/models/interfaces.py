"""The small interfaces every model role is used through.

Callers depend on these protocols only; ``apps.models.registry`` picks the
implementation (offline packages or hub ids) and loads it lazily. Vectors are
float32 numpy arrays of shape ``(n, dim)``, each row L2-normalised, so a dot
product is the cosine similarity.
"""

from __future__ import annotations

from collections import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import torch
    from PIL import Image
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

Vectors = npt.NDArray[np.float32]


class TextEmbedder(Protocol):
    """Sentence embeddings in one text space.

    Documents and queries are embedded separately because some models (e5)
    prefix them differently; for others both give the same vectors.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors: ...

    def embed_queries(self, texts: Sequence[str]) -> Vectors: ...


class ClipEmbedder(Protocol):
    """Images and texts embedded into one shared space (CLIP)."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed_images(self, images: Sequence[Image.Image]) -> Vectors: ...

    def embed_texts(self, texts: Sequence[str]) -> Vectors: ...


@dataclass(frozen=True)
class ImageDescription:
    """What the offline image path knows about one image.

    ``labels`` are the top ImageNet classes with their probabilities (highest
    first); ``description`` joins them with the shipped class descriptions;
    ``ocr_text`` is the text read from the image ("" when there is none).
    """

    labels: tuple[tuple[str, float], ...]
    description: str
    ocr_text: str

    @property
    def text(self) -> str:
        """The image as text, for the text embedding space: labels, then OCR text, then descriptions."""
        parts: list[str] = []
        if self.labels:
            parts.append("Image of " + ", ".join(name for name, _ in self.labels) + ".")
        if self.ocr_text:
            parts.append(f"Text in the image: {self.ocr_text}")
        if self.description:
            parts.append(self.description)
        return " ".join(parts)


class ImageTagger(Protocol):
    """ImageNet labels, class descriptions and OCR text for images (one result per image, in order)."""

    @property
    def name(self) -> str: ...

    def describe(self, images: Sequence[Image.Image]) -> list[ImageDescription]: ...


class Reranker(Protocol):
    """Scores passages against a query; higher is more relevant. One score per passage, in order."""

    @property
    def name(self) -> str: ...

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]: ...


class AnswerEngine(Protocol):
    """What writes an answer: the in-process generator (``kind`` "in-process") or a server speaking the
    OpenAI chat API (``kind`` "openai": vLLM, llama.cpp's server, Ollama, a hosted API). Both take the
    same prompt and stop rules and decode greedily; ``stream`` yields text pieces, and closing it early
    stops the generation. ``where`` says where it runs, for health reports and the audit page."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def where(self) -> str: ...

    def generate(self, prompt: str, *, max_new_tokens: int, system: str | None = None) -> str: ...

    def stream(
        self, prompt: str, *, max_new_tokens: int, system: str | None = None, avoid_first: Sequence[str] = ()
    ) -> abc.Generator[str, None, None]: ...


class Generator(AnswerEngine, Protocol):
    """An instruct language model, white-box: ``model`` and ``tokenizer`` are the Hugging Face
    objects themselves, so attribution code can run forward passes with attentions on exactly
    the token ids ``prompt_inputs`` builds (the chat template with the generation prompt).
    Decoding is greedy, so the same prompt gives the same answer. ``stream`` yields text pieces
    as they are generated; closing it early stops the generation.
    """

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> PreTrainedModel: ...

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase: ...

    def prompt_inputs(self, prompt: str, *, system: str | None = None) -> dict[str, torch.Tensor]: ...

    def prompt_prefill(self, prompt: str, *, system: str | None = None) -> None:
        """Read the prompt now and keep its keys and values for attributing an answer to it that
        another engine writes (only the answer is then left to read)."""
        ...

    def generate(self, prompt: str, *, max_new_tokens: int, system: str | None = None) -> str: ...

    def stream(
        self, prompt: str, *, max_new_tokens: int, system: str | None = None, avoid_first: Sequence[str] = ()
    ) -> abc.Generator[str, None, None]:
        """``avoid_first``: words the answer may not begin with (its first token is never theirs)."""
        ...
