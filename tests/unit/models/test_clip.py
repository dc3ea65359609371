from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from apps.models.clip import TINY_CLIP, OpenClipEmbedder, load_open_clip
from apps.models.interfaces import ClipEmbedder


def photos(images_dir: Path) -> list[Image.Image]:
    names = ["skimage_coffee.png", "skimage_camera.png", "skimage_horse.png"]  # RGB, L, RGBA
    return [Image.open(images_dir / name) for name in names]


def test_images_and_texts_land_in_one_normalised_space(tiny_clip: OpenClipEmbedder, images_dir: Path) -> None:
    embedder: ClipEmbedder = tiny_clip
    images = embedder.embed_images(photos(images_dir))
    texts = embedder.embed_texts(["a cup of espresso", "a camera", "a horse", "a rocket"])
    assert (embedder.name, embedder.dim) == (TINY_CLIP, 32)
    assert images.shape == (3, 32)
    assert texts.shape == (4, 32)
    assert images.dtype == texts.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(images, axis=1), 1.0, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(texts, axis=1), 1.0, atol=1e-4)
    assert (texts @ images.T).shape == (4, 3)


def test_batches_and_empty_inputs(tiny_clip: OpenClipEmbedder) -> None:
    many = [f"caption {i}" for i in range(20)]  # batch size 8: three batches
    vectors = tiny_clip.embed_texts(many)
    assert vectors.shape == (20, 32)
    np.testing.assert_allclose(vectors[17], tiny_clip.embed_texts([many[17]])[0], atol=1e-5)
    assert tiny_clip.embed_images([]).shape == (0, 32)
    assert tiny_clip.embed_texts([]).shape == (0, 32)


def test_the_tiny_model_is_the_same_in_every_load(tiny_clip: OpenClipEmbedder) -> None:
    """Seeded weights: a worker that embeds images and a web process that embeds queries agree."""
    again = load_open_clip(model_name=TINY_CLIP, pretrained=None, device="cpu", batch_size=8)
    np.testing.assert_allclose(again.embed_texts(["same"]), tiny_clip.embed_texts(["same"]), atol=1e-6)
