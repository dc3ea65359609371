"""Each embedding space's index configuration, from settings."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from apps.vectors.types import SPACES, HnswParams, IvfPqParams, SpaceConfig


def check_space(space: str) -> str:
    if space not in SPACES:
        raise ValueError(f"unknown embedding space {space!r} (use one of {', '.join(SPACES)})")
    return space


def _text_embedder_name() -> str:
    """The configured text embedder's name, its encoder variant included (VECTORS_TEXT_MODEL's
    default; nothing is loaded)."""
    from apps.models.registry import profile_specs

    return profile_specs().text_embedder.name


def space_config(space: str) -> SpaceConfig:
    prefix = f"VECTORS_{check_space(space).upper()}"
    return SpaceConfig(
        space=space,
        dim=getattr(settings, f"{prefix}_DIM"),
        model=getattr(settings, f"{prefix}_MODEL") or _text_embedder_name(),  # only text's may be empty
        index_type=getattr(settings, f"{prefix}_INDEX"),
        hnsw=HnswParams(
            m=settings.VECTORS_HNSW_M,
            ef_construction=settings.VECTORS_HNSW_EF_CONSTRUCTION,
            ef_search=settings.VECTORS_HNSW_EF_SEARCH,
            max_tombstones=settings.VECTORS_HNSW_MAX_TOMBSTONES,
            storage=settings.VECTORS_HNSW_STORAGE,
        ),
        ivfpq=IvfPqParams(
            nlist=settings.VECTORS_IVFPQ_NLIST,
            m=settings.VECTORS_IVFPQ_M,
            nbits=settings.VECTORS_IVFPQ_NBITS,
            nprobe=settings.VECTORS_IVFPQ_NPROBE,
        ),
        filter_exact_max=settings.VECTORS_FILTER_EXACT_MAX,
        use_gpu=settings.VECTORS_GPU == "auto",
    )


def space_dir(space: str) -> Path:
    """Where a space's index files live."""
    return Path(settings.VECTORS_DIR) / check_space(space)


def spaces_in_use() -> tuple[str, ...]:
    """The spaces the configured model profile fills: text always, mtext when a collection's texts are
    there (apps/vectors/spaces.py), clip with a CLIP model (nothing is loaded)."""
    from apps.models.registry import profile_specs
    from apps.vectors.spaces import multilingual_collections

    texts = ("text", "mtext") if multilingual_collections() else ("text",)
    return (*texts, "clip") if profile_specs().clip_embedder is not None else texts
