"""Real models, each loaded once per test session (from the installed packages, never the hub)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from apps.models import registry
from apps.models.clip import TINY_CLIP, OpenClipEmbedder, load_open_clip
from apps.models.generator import HFGenerator, load_smollm2
from apps.models.tagger import EfficientNetTagger, load_efficientnet_tagger
from apps.models.text import E5Embedder, SentenceTransformerEmbedder, load_e5, load_minilm


@pytest.fixture(scope="session")
def images_dir() -> Path:
    """The demo corpus's photos (../shared/data/images; captions.json says what each shows)."""
    return Path(settings.DEMO_DATA_DIR) / "images"


@pytest.fixture(scope="session")
def minilm() -> SentenceTransformerEmbedder:
    return load_minilm(device="cpu", batch_size=64)


@pytest.fixture(scope="session")
def e5() -> E5Embedder:
    return load_e5(batch_size=64)


@pytest.fixture(scope="session")
def tagger() -> EfficientNetTagger:
    return load_efficientnet_tagger(device="cpu", batch_size=8, ocr_min_confidence=0.6)


@pytest.fixture(scope="session")
def tiny_clip() -> OpenClipEmbedder:
    return load_open_clip(model_name=TINY_CLIP, pretrained=None, device="cpu", batch_size=8)


@pytest.fixture(scope="session")
def generator_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model cache folder that starts empty; the ``smollm2`` fixture fills it."""
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="session")
def smollm2(generator_cache: Path) -> HFGenerator:
    """The first load of the session: converts the packaged GGUF and caches the copy."""
    return load_smollm2(cache_root=generator_cache, device="cpu")


@pytest.fixture
def fresh_registry() -> Iterator[None]:
    """The process-wide registry cache, emptied before and after the test."""
    registry.forget_loaded()
    yield
    registry.forget_loaded()
