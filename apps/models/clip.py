"""CLIP image/text embeddings through open_clip.

The hub profile loads a pretrained model (``ViT-B-32`` / ``laion2b_s34b_b79k``).
No CLIP weights ship in any package, so offline the space is off; for wiring
tests ``ragkg-tiny-clip`` (config in ``clip_configs/``) is a tiny, randomly
initialised model, seeded so every process builds the same one. Its vectors
mean nothing; they only have the right shape, norm and space.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from apps.models.devices import select_device
from apps.models.interfaces import Vectors
from apps.models.text import as_vectors

if TYPE_CHECKING:
    import torch
    from PIL import Image

logger = logging.getLogger(__name__)

TINY_CLIP = "ragkg-tiny-clip"
TINY_CLIP_SEED = 20240611
CONFIG_DIR = Path(__file__).resolve().parent / "clip_configs"

_register_lock = threading.Lock()


def _open_clip() -> Any:
    """open_clip, with the project's own model configs registered (once)."""
    import open_clip

    with _register_lock:
        if TINY_CLIP not in open_clip.list_models():
            open_clip.add_model_config(CONFIG_DIR)
    return open_clip


class OpenClipEmbedder:
    """``ClipEmbedder`` on an open_clip model; both towers' outputs are L2-normalised."""

    def __init__(
        self,
        model: Any,
        *,
        preprocess: Callable[[Image.Image], torch.Tensor],
        tokenizer: Callable[[list[str]], torch.Tensor],
        name: str,
        dim: int,
        device: str,
        batch_size: int,
    ) -> None:
        self._model = model
        self._preprocess = preprocess
        self._tokenizer = tokenizer
        self._name = name
        self._dim = dim
        self._device = device
        self._batch_size = batch_size

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def device(self) -> str:
        return self._device

    def _batches(self, count: int) -> range:
        return range(0, count, self._batch_size)

    def embed_images(self, images: Sequence[Image.Image]) -> Vectors:
        import torch

        if not images:
            return np.zeros((0, self._dim), dtype=np.float32)
        dtype = next(self._model.parameters()).dtype
        parts: list[Vectors] = []
        for start in self._batches(len(images)):
            pixels = torch.stack(
                [self._preprocess(image.convert("RGB")) for image in images[start : start + self._batch_size]]
            )
            with torch.inference_mode():
                features = self._model.encode_image(pixels.to(self._device, dtype=dtype), normalize=True)
            parts.append(as_vectors(features.float().cpu().numpy(), dim=self._dim))
        return np.concatenate(parts)

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        import torch

        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        parts: list[Vectors] = []
        for start in self._batches(len(texts)):
            tokens = self._tokenizer(list(texts[start : start + self._batch_size])).to(self._device)
            with torch.inference_mode():
                features = self._model.encode_text(tokens, normalize=True)
            parts.append(as_vectors(features.float().cpu().numpy(), dim=self._dim))
        return np.concatenate(parts)


def load_open_clip(*, model_name: str, pretrained: str | None, device: str, batch_size: int) -> OpenClipEmbedder:
    """An open_clip model: ``pretrained`` is a tag (downloads), a local checkpoint file, or None
    (random weights; the tiny model is seeded so every process gets the same weights)."""
    import torch

    open_clip = _open_clip()
    config = open_clip.get_model_config(model_name)
    if config is None:
        raise ValueError(f"unknown open_clip model {model_name!r} (see open_clip.list_models())")
    resolved = select_device(device)
    precision = "fp16" if resolved == "cuda" else "fp32"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(TINY_CLIP_SEED)
        model, _, preprocess = open_clip.create_model_and_transforms(
            model_name, pretrained=pretrained, device=resolved, precision=precision
        )
    model.eval()
    logger.info("loaded CLIP %s (%s) on %s", model_name, pretrained or "random weights", resolved)
    return OpenClipEmbedder(
        model,
        preprocess=preprocess,
        tokenizer=open_clip.get_tokenizer(model_name),
        name=model_name if pretrained is None else f"{model_name}/{Path(pretrained).name}",
        dim=int(config["embed_dim"]),
        device=resolved,
        batch_size=batch_size,
    )
