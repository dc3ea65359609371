"""Which device models run on, decided in one place."""

from __future__ import annotations

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


def cpu_has_bf16() -> bool:
    """Whether this CPU multiplies bf16 matrices natively (AVX-512 BF16 or AMX): oneDNN says."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def dtype_for(device: str, preference: str = "auto") -> torch.dtype:
    """The generator's dtype: ``preference`` (``RAGKG_GENERATOR_DTYPE``) when it names one, else fp16 on
    a GPU, bf16 on a CPU with bf16 matrix units (about 3x faster than fp32 here), fp32 on other CPUs
    (fp16 matmuls are slow or missing there)."""
    import torch

    if preference != "auto":
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[preference]
    if device.startswith("cuda"):
        return torch.float16
    return torch.bfloat16 if cpu_has_bf16() else torch.float32
