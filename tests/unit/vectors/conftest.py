from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from apps.vectors.registry import vector_registry_reset


@pytest.fixture
def vectors_dir(tmp_path: Path, settings: Settings, db: None) -> Iterator[Path]:
    """A private VECTORS_DIR (the store in the test database) with a small text space (32-d, exact) and a
    fresh registry."""
    settings.VECTORS_DIR = tmp_path / "vectors"
    settings.VECTORS_TEXT_DIM = 32
    settings.VECTORS_TEXT_MODEL = "fake-model"
    settings.VECTORS_TEXT_INDEX = "flat"
    vector_registry_reset()
    yield Path(settings.VECTORS_DIR)
    vector_registry_reset()
