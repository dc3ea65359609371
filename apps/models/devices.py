"""Which device models run on, decided in one place."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


class DeviceUnavailable(RuntimeError):
    """The configured device does not exist on this machine."""


def select_device(preference: str) -> str:
    """``"cuda"`` or ``"cpu"`` for a ``RAGKG_MODEL_DEVICE`` value (auto, cpu or cuda).

    auto picks CUDA when torch sees a GPU; asking for cuda where there is none fails loudly.
    """
    if preference == "cpu":
        return "cpu"
    import torch

    available = torch.cuda.is_available()
    if preference == "cuda" and not available:
        raise DeviceUnavailable("RAGKG_MODEL_DEVICE=cuda, but torch sees no CUDA device")
    return "cuda" if available else "cpu"


GPU_EMBED_BATCH, CPU_EMBED_BATCH = 64, 8


def embed_batch_size(device_preference: str, configured: int = 0) -> int:
    """The embedders' batch size: ``configured`` (``RAGKG_EMBED_BATCH_SIZE``) when set, else 64 where the
    models run on a GPU (the device setting allows one and an NVIDIA GPU is present; read without
    importing torch) and 8 on a CPU. On the CPU small batches are faster per text: a batch of 64 chunks padded to its
    longest outgrows the caches (all-MiniLM-L6-v2 on 456 ingested 2Wiki chunks, 2 cores: 17 chunks/s
    at 64, 47 at 8; docs/performance.md)."""
    if configured > 0:
        return configured
    return GPU_EMBED_BATCH if _models_on_gpu(device_preference) else CPU_EMBED_BATCH


def _models_on_gpu(device_preference: str) -> bool:
    """Whether the models run on a GPU: the device setting asks for CUDA, or allows it (auto) and an
    NVIDIA GPU is present (read without importing torch)."""
    return device_preference.startswith("cuda") or (device_preference == "auto" and _nvidia_gpu_present())


QUERY_THREADS = 2


def query_threads(configured: int = 0, cores: int | None = None) -> int:
    """Intra-op threads of the ONNX Runtime session that embeds questions: ``configured``
    (``ANSWER_QUERY_THREADS``) when set, else 2 where there are 2 cores or more. A one-line question
    through MiniLM on this project's 2-core CPU: 7.4 ms p50 on one thread, 5.6 on two idle, the same
    8.5 either way beside a running ingestion (the session's threads sleep when idle; make bench-answers,
    docs/performance.md). More than 2 buys nothing for a few dozen tokens."""
    if configured > 0:
        return configured
    return max(1, min(QUERY_THREADS, cores if cores is not None else (os.cpu_count() or 1)))


TEXT_ENCODERS = ("torch", "onnx", "onnx-int8")


def text_encoder_key(preference: str, device_preference: str) -> str:
    """How all-MiniLM-L6-v2 runs (``RAGKG_TEXT_ENCODER`` resolved, without importing torch): itself
    unless auto; auto is torch where the models run on a GPU (fp16 there) and ONNX Runtime fp32 on a
    CPU: the same vectors as torch, 1.3-1.6x the chunks per second and a one-line query in 7-8 ms
    instead of 18-22 on this project's 2-core CPU. int8 is faster still (3.7 ms, 2.2x) but lost
    1.1-2.2 points of R@5 on two of the three multi-hop sets, more than the 0.5 a default may lose
    (``make bench-encoders``, docs/performance.md), so it is chosen by setting only."""
    if preference != "auto":
        return preference
    return "torch" if _models_on_gpu(device_preference) else "onnx"


def cpu_has_bf16() -> bool:
    """Whether this CPU multiplies bf16 matrices natively (AVX-512 BF16 or AMX): oneDNN says."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def generator_precision(device: str, preference: str = "auto") -> str:
    """The generator's precision (float32, bfloat16, float16 or int8): ``preference`` (``RAGKG_GENERATOR_DTYPE``) when
    it names one (int8 is a CPU format: on a GPU it means fp16), else fp16 on a GPU and on a CPU the one the
    probe measured fastest (``apps.models.probe``: bf16 where its matrix product beats fp32's, fp32 elsewhere),
    or before any probe ran, bf16 where oneDNN reports bf16 support (docs/models.md compares int8 there)."""
    on_gpu = device.startswith("cuda")
    if preference != "auto":
        return "float16" if preference == "int8" and on_gpu else preference
    if on_gpu:
        return "float16"
    from apps.models.auto import auto_result

    measured = auto_result()
    if measured is not None:  # the precision whose matrix product measured fastest here
        return measured.precision
    return "bfloat16" if cpu_has_bf16() else "float32"


def dtype_for(device: str, preference: str = "auto") -> torch.dtype:
    """The dtype the generator's weights load in: that of ``generator_precision``; int8 loads fp32
    weights and quantizes their linear layers after loading (apps.models.generator.quantized_int8)."""
    import torch

    precision = generator_precision(device, preference)
    return {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(precision, torch.float32)


BF16_CPU_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})


def _cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    try:
        text = cpuinfo.read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def _nvidia_gpu_present(gpus: Path = Path("/proc/driver/nvidia/gpus")) -> bool:
    try:
        return any(gpus.iterdir())
    except OSError:
        return False


@functools.cache
def generator_auto(device_preference: str) -> str:
    """The offline generator ``RAGKG_GENERATOR=auto`` means on this machine, decided without importing
    torch (listing the profile stays cheap): Qwen2.5-Coder-1.5B where it runs fast (an NVIDIA GPU the
    device setting allows, or a CPU with bf16 matrix units: AMX or AVX-512 BF16), the 0.5B elsewhere
    (on a 2-core CPU with fp32 only, the 1.5B's first token came after 13 s on a 560-token prompt, the
    0.5B's after 3 s; docs/models.md)."""
    gpu = device_preference != "cpu" and _nvidia_gpu_present()
    return "qwen2.5-1.5b" if gpu or _cpu_flags() & BF16_CPU_FLAGS else "qwen2.5-0.5b"


def generator_key(preference: str, device_preference: str) -> str:
    """``RAGKG_GENERATOR`` resolved: itself, or for ``auto`` this machine's measured choice
    (``apps.models.auto``), or ``generator_auto``'s rule where nothing was measured yet."""
    if preference != "auto":
        return preference
    from apps.models.auto import auto_result

    measured = auto_result(device_preference)
    return measured.key if measured is not None else generator_auto(device_preference)
