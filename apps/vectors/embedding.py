"""Where the vector layer gets embeddings when it must make them itself (rebuild, repair).

Ingestion embeds and calls ``vectors_add``; only rebuilding from the graph needs an embedder
here, passed in as a plain callable so tests inject a deterministic fake.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Any, cast

import numpy as np

from apps.vectors.errors import EmbedderUnavailable, IndexMismatch
from apps.vectors.types import EmbedFn, Vectors

logger = logging.getLogger(__name__)


def _model_registry(role: str) -> Any:
    """``apps.models.registry``, or EmbedderUnavailable naming ``role`` when it cannot be imported."""
    try:
        return importlib.import_module("apps.models.registry")
    except ImportError as exc:
        raise EmbedderUnavailable(f"no {role} embedding model is available ({exc})") from exc


def default_text_embed(space: str = "text") -> EmbedFn:
    """The ``embed_documents`` of a text space's embedding model (from ``apps.models``)."""
    embedder = _model_registry("text").space_embedder(space)
    logger.info("text embeddings from %s (%s dimensions)", type(embedder).__name__, getattr(embedder, "dim", "?"))
    return cast(EmbedFn, embedder.embed_documents)


def default_clip_embed() -> EmbedFn:
    """The configured CLIP model's image tower over stored image files (paths under MEDIA_ROOT)."""
    from django.conf import settings
    from PIL import Image

    clip = _model_registry("CLIP").clip_embedder()
    if clip is None:
        raise EmbedderUnavailable("the CLIP space is off: set RAGKG_CLIP_MODEL to an open_clip model")

    def embed(paths: list[str]) -> Vectors:
        images = []
        for path in paths:
            with Image.open(Path(settings.MEDIA_ROOT) / path) as image:
                images.append(image.convert("RGB"))
        return cast(Vectors, clip.embed_images(images))

    return embed


def embed_checked(embed: EmbedFn, contents: list[str], *, dim: int, space: str) -> Vectors:
    """Embed and check that one ``dim``-dimensional row came back per input."""
    vectors = np.asarray(embed(contents), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(contents):
        raise ValueError(f"the embedder returned shape {vectors.shape} for {len(contents)} inputs")
    if vectors.shape[1] != dim:
        raise IndexMismatch(
            f"the embedder gives {vectors.shape[1]}-d vectors but the {space} space is configured for {dim} "
            f"(VECTORS_{space.upper()}_DIM, VECTORS_{space.upper()}_MODEL): fix the setting, then "
            f"run `manage.py vectors rebuild --space {space}`"
        )
    return vectors
