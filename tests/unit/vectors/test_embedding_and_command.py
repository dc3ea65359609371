"""The default embedder hook and the `vectors` management command (without Neo4j)."""

from __future__ import annotations

import json
import sys
import types
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from pytest_django.fixtures import Settings

from apps.vectors.embedding import default_text_embed, embed_checked
from apps.vectors.errors import EmbedderUnavailable, IndexMismatch
from apps.vectors.registry import vector_registry_reset
from apps.vectors.services import vectors_add
from tests.unit.vectors.fakes import clustered, hashing_embed, items


def test_without_the_models_app_the_default_embedder_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "apps.models.registry", None)  # import fails
    with pytest.raises(EmbedderUnavailable, match="no text embedding model"):
        default_text_embed()


def test_the_default_embedder_is_the_models_apps_embedder_of_the_space(monkeypatch: pytest.MonkeyPatch) -> None:
    class Embedder:
        dim = 8

        def embed_documents(self, texts: list[str]) -> np.ndarray:
            return hashing_embed(texts, 8)

    module = types.ModuleType("apps.models.registry")
    asked: list[str] = []

    def space_embedder(space: str) -> Embedder:
        asked.append(space)
        return Embedder()

    module.space_embedder = space_embedder  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "apps.models.registry", module)
    assert default_text_embed()(["one", "two"]).shape == (2, 8)
    assert default_text_embed("mtext")(["one"]).shape == (1, 8)
    assert asked == ["text", "mtext"]


def test_an_embedder_of_another_dimension_is_refused_with_the_fix() -> None:
    with pytest.raises(IndexMismatch, match=r"8-d vectors .* configured for 32 .*vectors rebuild --space text"):
        embed_checked(lambda texts: hashing_embed(texts, 8), ["a"], dim=32, space="text")
    with pytest.raises(ValueError, match="returned shape"):
        embed_checked(lambda texts: hashing_embed(texts[:1], 32), ["a", "b"], dim=32, space="text")


def test_the_fake_embedder_is_deterministic_and_word_sensitive() -> None:
    a, b, c = hashing_embed(["Ada Lovelace wrote", "Ada Lovelace wrote", "steam engines"])
    assert np.array_equal(a, b) and float(a @ c) < 0.5 and float(np.linalg.norm(a)) == pytest.approx(1.0)


def test_info_prints_each_space_in_use(vectors_dir: Path, settings: Settings) -> None:
    vectors_add(space="text", items=items(0, 3), vectors=clustered(3, 32))
    out = StringIO()
    call_command("vectors", "info", "--space", "text", "--json", stdout=out)
    [info] = json.loads(out.getvalue())
    assert info["count"] == 3 and info["feed"] == {"seq": 1, "epoch": info["feed"]["epoch"], "stored": 3, "pruned": 0}
    assert "no saved vector index" in info["saved"]["error"] and info["directory"] == str(vectors_dir / "text")
    out = StringIO()
    call_command("vectors", "info", stdout=out)
    assert "text: 3 vectors, flat" in out.getvalue() and "clip:" not in out.getvalue()  # no CLIP model: no space
    settings.CLIP_MODEL = settings.VECTORS_CLIP_MODEL = "ragkg-tiny-clip"
    settings.VECTORS_CLIP_DIM = 32
    out = StringIO()
    call_command("vectors", "info", stdout=out)
    assert "text: 3 vectors, flat" in out.getvalue() and "clip: 0 vectors" in out.getvalue()


def test_info_reports_a_model_change_as_a_command_error(vectors_dir: Path, settings: Settings) -> None:
    vectors_add(space="text", items=items(0, 3), vectors=clustered(3, 32))
    settings.VECTORS_TEXT_MODEL = "another-model"
    vector_registry_reset()
    with pytest.raises(CommandError, match=r"IndexMismatch: .*manage\.py vectors rebuild --space text"):
        call_command("vectors", "info", "--space", "text")


def test_rebuild_without_an_embedder_says_so(vectors_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "apps.models.registry", None)
    with pytest.raises(CommandError, match="no text embedding model"):
        call_command("vectors", "rebuild", "--space", "text")
    with pytest.raises(CommandError, match="no CLIP embedding model"):
        call_command("vectors", "rebuild", "--space", "clip")


def test_rebuilding_the_clip_space_while_it_is_off_names_the_setting(vectors_dir: Path, settings: Settings) -> None:
    settings.CLIP_MODEL = "off"
    with pytest.raises(CommandError, match="the CLIP space is off: set RAGKG_CLIP_MODEL"):
        call_command("vectors", "rebuild", "--space", "clip")


def test_prune_drops_the_tombstones_of_all_but_the_last_changes(vectors_dir: Path) -> None:
    from apps.vectors.models import StoredVector
    from apps.vectors.services import vectors_remove
    from apps.vectors.store import store_head

    vectors_add(space="text", items=items(0, 6), vectors=clustered(6, 32))
    for i in range(3):
        vectors_remove(space="text", node_ids=[items(i, i + 1)[0].node_id])  # changes 2, 3, 4
    out = StringIO()
    call_command("vectors", "prune", "--space", "text", "--keep", "1", stdout=out)
    assert out.getvalue().strip() == "text: 2 tombstones dropped (changes up to 3)"
    assert StoredVector.objects.filter(space="text", removed=True).count() == 1 and store_head("text").pruned == 3
    with pytest.raises(CommandError, match="--keep"):
        call_command("vectors", "prune", "--keep", "-1")
