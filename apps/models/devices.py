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


def dtype_for(device: str) -> torch.dtype:
    """fp16 on a GPU, fp32 on the CPU (fp16 matmuls are slow or missing there)."""
    import torch

    return torch.float16 if device.startswith("cuda") else torch.float32
