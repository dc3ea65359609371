"""RAGKG_GENERATOR=auto: the generator this machine runs fast enough, read from the hardware without torch."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.models import auto, devices, probe

AMX_CPU = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_bf16 amx_tile\nmodel name\t: Xeon\n"
AVX2_CPU = "processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\nmodel name\t: EPYC\n"


def test_cpu_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(AMX_CPU)
    assert {"amx_bf16", "avx512_bf16", "avx2"} <= devices._cpu_flags(cpuinfo)
    assert devices._cpu_flags(tmp_path / "missing") == frozenset()


def test_an_nvidia_gpu_is_seen_from_the_driver_directory(tmp_path: Path) -> None:
    gpus = tmp_path / "gpus"
    assert not devices._nvidia_gpu_present(gpus)  # no driver
    gpus.mkdir()
    assert not devices._nvidia_gpu_present(gpus)  # driver, no GPU
    (gpus / "0000:17:00.0").mkdir()
    assert devices._nvidia_gpu_present(gpus)


@pytest.mark.parametrize(
    ("cpuinfo", "gpu", "device", "expected"),
    [
        (AMX_CPU, False, "auto", "qwen2.5-1.5b"),
        (AVX2_CPU, False, "auto", "qwen2.5-0.5b"),
        (AVX2_CPU, True, "auto", "qwen2.5-1.5b"),
        (AVX2_CPU, True, "cpu", "qwen2.5-0.5b"),  # a GPU the device setting forbids does not count
    ],
)
def test_auto_picks_the_larger_generator_only_where_it_runs_fast(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cpuinfo: str, gpu: bool, device: str, expected: str
) -> None:
    (tmp_path / "cpuinfo").write_text(cpuinfo)
    read_flags = devices._cpu_flags
    monkeypatch.setattr(devices, "_cpu_flags", lambda: read_flags(tmp_path / "cpuinfo"))
    monkeypatch.setattr(devices, "_nvidia_gpu_present", lambda: gpu)
    assert devices.generator_auto.__wrapped__(device) == expected


def test_a_named_generator_is_kept() -> None:
    assert devices.generator_key("smollm2", "auto") == "smollm2"
    assert devices.generator_key("auto", "auto") in {"qwen2.5-1.5b", "qwen2.5-0.5b"}


@pytest.mark.parametrize(
    ("device", "preference", "bf16", "expected"),
    [
        ("cpu", "auto", True, "bfloat16"),
        ("cpu", "auto", False, "float32"),
        ("cuda", "auto", False, "float16"),
        ("cpu", "int8", False, "int8"),
        ("cuda:0", "int8", False, "float16"),  # int8 is a CPU format
        ("cpu", "float16", True, "float16"),
    ],
)
def test_the_generator_precision_follows_the_setting_and_the_hardware_before_any_probe(
    monkeypatch: pytest.MonkeyPatch, device: str, preference: str, bf16: bool, expected: str
) -> None:
    monkeypatch.setattr(devices, "cpu_has_bf16", lambda: bf16)
    monkeypatch.setattr(auto, "auto_result", lambda device_preference=None: None)
    assert devices.generator_precision(device, preference) == expected


@pytest.mark.parametrize("measured", ["float32", "bfloat16"])
def test_a_probe_result_decides_the_cpu_precision_whatever_the_flags_say(
    monkeypatch: pytest.MonkeyPatch, measured: str
) -> None:
    result = probe.ProbeResult("qwen2.5-0.5b", measured, "measured", 6.0, ())
    monkeypatch.setattr(devices, "cpu_has_bf16", lambda: measured != "bfloat16")
    monkeypatch.setattr(auto, "auto_result", lambda device_preference=None: result)
    assert devices.generator_precision("cpu", "auto") == measured
    assert devices.generator_precision("cuda", "auto") == "float16"
    assert devices.generator_key("auto", "auto") == "qwen2.5-0.5b"


def test_int8_weights_load_in_fp32_before_they_are_quantized() -> None:
    import torch

    assert devices.dtype_for("cpu", "int8") is torch.float32
    assert devices.dtype_for("cpu", "bfloat16") is torch.bfloat16


@pytest.mark.parametrize(
    ("device", "configured", "expected"),
    [("cpu", 0, 8), ("cuda", 0, 64), ("cuda:1", 0, 64), ("cpu", 32, 32), ("cuda", 16, 16)],
)
def test_the_embed_batch_size_is_small_on_a_cpu_unless_configured(device: str, configured: int, expected: int) -> None:
    assert devices.embed_batch_size(device, configured) == expected


@pytest.mark.parametrize(("gpu", "expected"), [(True, 64), (False, 8)])
def test_auto_embed_batch_size_follows_the_gpu(monkeypatch: pytest.MonkeyPatch, gpu: bool, expected: int) -> None:
    monkeypatch.setattr(devices, "_nvidia_gpu_present", lambda: gpu)
    assert devices.embed_batch_size("auto") == expected


def test_questions_embed_on_two_threads_where_there_are_two_cores_unless_set() -> None:
    assert devices.query_threads(0, cores=1) == 1
    assert devices.query_threads(0, cores=2) == 2
    assert devices.query_threads(0, cores=64) == 2
    assert devices.query_threads(3, cores=1) == 3
