"""What the models add to ingested documents: image descriptions and the units' vectors.

``ModelSet`` names the models ingestion uses (the registry's, or fakes in tests).
``images_describe`` fills image rows with ImageNet labels and OCR text before
entity extraction, so an image's text is analysed like any other unit's.
``units_embed`` embeds a batch's units (text space: chunks, rows and image
texts; CLIP space: the images themselves) and ``unit_vectors_store`` puts the
vectors of written documents into the FAISS indexes and removes those of
replaced ones.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from apps.ingest.graph_build import Unit
from apps.ingest.types import ParsedImage
from apps.models.interfaces import ClipEmbedder, ImageTagger, TextEmbedder, Vectors
from apps.vectors.config import space_config
from apps.vectors.errors import IndexMismatch
from apps.vectors.services import vectors_add, vectors_remove
from apps.vectors.types import SPACES, VectorItem

TEXT, MTEXT, CLIP = "text", "mtext", "clip"


@dataclass(frozen=True)
class ModelSet:
    """The models one ingestion run uses; ``clip`` is None when the CLIP space is off. ``mtext`` loads
    the multilingual space's embedder, on the first batch of a collection in that space."""

    text: TextEmbedder
    tagger: ImageTagger
    clip: ClipEmbedder | None
    mtext: Callable[[], TextEmbedder] | None = None

    def text_for(self, space: str) -> TextEmbedder:
        """The embedder of a text space (apps/vectors/spaces.py)."""
        if space == TEXT:
            return self.text
        if space != MTEXT or self.mtext is None:
            raise IndexMismatch(f"no embedder for the {space} space in this ingestion")
        embedder = self.mtext()
        models_check_space(MTEXT, embedder)
        return embedder


def default_models() -> ModelSet:
    """The configured profile's models, loaded once per process on first use."""
    from apps.models.registry import clip_embedder, image_tagger, space_embedder, text_embedder

    models = ModelSet(
        text=text_embedder(), tagger=image_tagger(), clip=clip_embedder(), mtext=lambda: space_embedder(MTEXT)
    )
    models_check(models)
    return models


def models_check_space(space: str, embedder: TextEmbedder | ClipEmbedder) -> None:
    """Refuse a model whose vectors do not belong in ``space`` (never store garbage)."""
    config = space_config(space)
    if (embedder.name, embedder.dim) != (config.model, config.dim):
        raise IndexMismatch(
            f"the {space} space holds {config.model} vectors ({config.dim}-d) but the model is {embedder.name} "
            f"({embedder.dim}-d): set VECTORS_{space.upper()}_MODEL / VECTORS_{space.upper()}_DIM to match, "
            f"then run `manage.py vectors rebuild --space {space}`"
        )


def models_check(models: ModelSet) -> None:
    """Refuse models whose vectors do not belong in the configured spaces."""
    models_check_space(TEXT, models.text)
    if models.clip is not None:
        models_check_space(CLIP, models.clip)


@dataclass
class UnitVectors:
    """Vectors of one document's units, per space, ready to be stored once the document is written."""

    items: dict[str, list[VectorItem]] = field(default_factory=lambda: {space: [] for space in SPACES})
    vectors: dict[str, list[Vectors]] = field(default_factory=lambda: {space: [] for space in SPACES})


def _pil(data: bytes) -> Image.Image:
    with Image.open(io.BytesIO(data)) as image:
        image.seek(0)  # the first frame of an animation
        return image.convert("RGB")


def images_describe(*, tagger: ImageTagger, rows: Sequence[dict[str, Any]], images: Sequence[ParsedImage]) -> None:
    """Set each image row's ``labels``, ``label_scores``, ``ocr_text`` and ``text`` (what is embedded)."""
    if not rows:
        return
    descriptions = tagger.describe([_pil(image.data) for image in images])
    for row, description in zip(rows, descriptions, strict=True):
        row["labels"] = [name for name, _ in description.labels]
        row["label_scores"] = [round(score, 4) for _, score in description.labels]
        row["ocr_text"] = description.ocr_text
        row["text"] = description.text


def units_embed(
    *,
    models: ModelSet,
    collection: str,
    documents: Sequence[tuple[Sequence[Unit], Sequence[ParsedImage], Sequence[dict[str, Any]]]],
    space: str = TEXT,
) -> list[UnitVectors]:
    """Embed every document's units in one call per space (their texts in the collection's text
    ``space``); one ``UnitVectors`` per document."""
    texts = [unit.text for units, _, _ in documents for unit in units]
    text_vectors: Iterator[Vectors] = iter(models.text_for(space).embed_documents(texts) if texts else [])
    pictures = [image for _, images, _ in documents for image in images]
    clip_vectors: Iterator[Vectors] = iter(
        models.clip.embed_images([_pil(image.data) for image in pictures]) if models.clip and pictures else []
    )
    results = []
    for units, images, rows in documents:
        found = UnitVectors()
        for unit in units:
            found.items[space].append(VectorItem(unit.id, unit.label, collection))
            found.vectors[space].append(next(text_vectors))
        if models.clip is not None:
            for _, row in zip(images, rows, strict=True):
                found.items[CLIP].append(VectorItem(row["id"], "Image", collection))
                found.vectors[CLIP].append(next(clip_vectors))
        results.append(found)
    return results


def vector_spaces(models: ModelSet, text_space: str = TEXT) -> tuple[str, ...]:
    return (text_space, CLIP) if models.clip is not None else (text_space,)


def unit_vectors_store(*, spaces: Sequence[str], added: Sequence[UnitVectors], removed_units: Sequence[str]) -> None:
    """Remove the vectors of ``removed_units`` and add those of the written documents, in each space."""
    for space in spaces:
        if removed_units:
            vectors_remove(space=space, node_ids=removed_units)
        items = [item for found in added for item in found.items[space]]
        if items:
            stacked = np.stack([vector for found in added for vector in found.vectors[space]]).astype(np.float32)
            vectors_add(space=space, items=items, vectors=stacked)
