"""Which offline generator ``RAGKG_GENERATOR=auto`` runs on this machine, decided by measuring it.

The candidates, most accurate first (docs/models.md has the answer-quality figures), are timed on this
machine: a prefill of a typical prompt (``PROMPT_TOKENS``: what an answer reads after the cached system
prompt) and a few decoded tokens, in the precision this CPU runs fastest (bf16 only where a bf16 matrix
product measures faster than fp32; fp16 on CUDA). The expected short answer is that prefill plus
``ANSWER_TOKENS`` decoded tokens, and ``auto`` is the most accurate candidate whose expected answer fits
``RAGKG_ANSWER_BUDGET_S``; when none does, the fastest. A candidate whose estimate (its multiply-adds at
this CPU's measured matrix rate) is already over 1.5 times the budget is not loaded at all.

The result is cached per machine (CPU model, flags, cores, GPU), library and package versions and budget
(``$RAGKG_MODEL_CACHE_DIR/probe/<key>.json``): ``make setup`` runs it once (``manage.py models --probe``),
and the generation worker runs it at start when it finds none. Processes that find no result use the
older rule (the 1.5B with a GPU or bf16 units, else the 0.5B) and say that it is not measured.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

# Most accurate first (docs/models.md). SmolLM2-135M is not one: fast, and almost never right.
CANDIDATES = ("qwen2.5-1.5b", "qwen2.5-0.5b")
PARAMETERS = {"qwen2.5-1.5b": 1.54e9, "qwen2.5-0.5b": 0.49e9, "smollm2": 0.135e9}
PROMPT_TOKENS = 600  # a pipeline prompt (850-950 tokens) less the system prompt read once per process
ANSWER_TOKENS = 12  # a short answer with its line break and end
DECODE_TOKENS = 8  # decoded by the probe to time one token
BF16_ADVANTAGE = 1.3  # bf16 is used where its matrix product is at least this much faster than fp32
SKIP_FACTOR = 1.5  # a candidate estimated above this many budgets is not loaded (estimates came within 5 %)
PROBE_VERSION = 1


@dataclass(frozen=True)
class Timing:
    """One candidate on this machine: measured (``prefill_s``, ``token_s``) or skipped (``note`` says why)."""

    key: str
    precision: str
    estimated_s: float
    load_s: float = 0.0
    prefill_s: float = 0.0
    token_s: float = 0.0
    note: str = ""

    @property
    def measured(self) -> bool:
        return self.prefill_s > 0

    @property
    def expected_s(self) -> float:
        """The expected short answer: the prompt's prefill and ``ANSWER_TOKENS`` decoded tokens."""
        return round(self.prefill_s + ANSWER_TOKENS * self.token_s, 3) if self.measured else self.estimated_s


@dataclass(frozen=True)
class ProbeResult:
    """The choice, why, and every candidate's figures, with the machine they were measured on."""

    key: str
    precision: str
    reason: str
    budget_s: float
    timings: tuple[Timing, ...]
    machine: dict[str, Any] = field(default_factory=dict)
    rates_gflops: dict[str, float] = field(default_factory=dict)
    measured_at: str = ""

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["timings"] = [{**asdict(timing), "expected_s": timing.expected_s} for timing in self.timings]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeResult:
        timings = tuple(
            Timing(**{name: value for name, value in row.items() if name != "expected_s"}) for row in data["timings"]
        )
        return cls(**{**data, "timings": timings})


def _cpu() -> tuple[str, list[str]]:
    model, flags = platform.processor() or "unknown", list[str]()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = line.partition(":")
            if name.strip() == "model name" and model in ("unknown", "", "x86_64"):
                model = value.strip()
            elif name.strip() == "flags" and not flags:
                flags = value.split()
    except OSError:
        pass
    return model, flags


def _gpu_name(gpus: Path = Path("/proc/driver/nvidia/gpus")) -> str:
    """The first NVIDIA GPU's model as the driver names it ("" when there is none)."""
    try:
        for information in sorted(gpus.glob("*/information")):
            for line in information.read_text().splitlines():
                if line.startswith("Model:"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return ""


def machine_fingerprint(device: str) -> dict[str, Any]:
    """What the figures depend on: CPU model and flags, cores, GPU, library versions (read without
    importing them: listing the models stays cheap)."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return ""

    model, flags = _cpu()
    return {
        "cpu": model,
        "flags_sha256": hashlib.sha256(" ".join(sorted(flags)).encode()).hexdigest()[:16],
        "bf16_flags": sorted(set(flags) & {"avx512_bf16", "amx_bf16", "amx_tile"}),
        "cores": os.cpu_count() or 1,
        "device": device,
        "gpu": _gpu_name() if device == "cuda" else "",
        "torch": installed("torch"),
        "transformers": installed("transformers"),
    }


def cache_key(machine: dict[str, Any], budget_s: float, versions: dict[str, str]) -> str:
    payload = json.dumps({"v": PROBE_VERSION, "m": machine, "b": budget_s, "p": versions}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def matmul_gflops(dtype_name: str, device: str, *, repeats: int = 3) -> float:
    """GFLOP/s of a (256 x 896) by (896 x 4864) product (a 0.5B model's MLP on a prompt chunk) in that
    precision, best of ``repeats`` after a warm-up."""
    import torch

    dtype = getattr(torch, dtype_name)
    left = torch.randn(256, 896, device=device).to(dtype)
    right = torch.randn(896, 4864, device=device).to(dtype)
    flops = 2 * 256 * 896 * 4864
    best = float("inf")
    with torch.inference_mode():
        for attempt in range(repeats + 1):
            started = time.perf_counter()
            torch.matmul(left, right)
            if device == "cuda":
                torch.cuda.synchronize()
            if attempt:
                best = min(best, time.perf_counter() - started)
            if time.perf_counter() - started > 2.0:  # an emulated precision: one slow try says enough
                best = min(best, time.perf_counter() - started)
                break
    return round(flops / best / 1e9, 1)


def precision_rates(device: str) -> dict[str, float]:
    """The measured matrix rates this choice rests on (GFLOP/s by precision)."""
    if device == "cuda":
        return {"float16": matmul_gflops("float16", device), "float32": matmul_gflops("float32", device)}
    return {"float32": matmul_gflops("float32", device), "bfloat16": matmul_gflops("bfloat16", device)}


def fastest_precision(rates: dict[str, float], device: str) -> str:
    """fp16 on CUDA; on a CPU bf16 where it measured ``BF16_ADVANTAGE`` times fp32's rate, else fp32."""
    if device == "cuda":
        return "float16"
    return "bfloat16" if rates.get("bfloat16", 0.0) >= BF16_ADVANTAGE * rates["float32"] else "float32"


Loader = Callable[[str, str], Any]  # (candidate key, precision) -> a loaded Generator


def time_candidate(generator: Any, *, prompt_tokens: int = PROMPT_TOKENS) -> tuple[float, float]:
    """(prefill seconds for ``prompt_tokens`` tokens, seconds per decoded token) of a loaded generator."""
    import torch

    model, tokenizer = generator.model, generator.tokenizer
    text = " ".join(["The Bryological Society of Wales publishes the Journal of Moss Studies since 1921."] * 80)
    ids = tokenizer(text, return_tensors="pt")["input_ids"][:, :prompt_tokens].to(model.device)
    with torch.inference_mode():
        model(ids[:, :16], logits_to_keep=1)  # the kernels' first use
        started = time.perf_counter()
        output = model(ids, use_cache=True, logits_to_keep=1)
        prefill = time.perf_counter() - started
        cache, token = output.cache, output.logits[:, -1:].argmax(-1)
        started = time.perf_counter()
        for _ in range(DECODE_TOKENS):
            step = model(token, cache=cache, use_cache=True, logits_to_keep=1)
            cache, token = step.cache, step.logits[:, -1:].argmax(-1)
        per_token = (time.perf_counter() - started) / DECODE_TOKENS
    return round(prefill, 3), round(per_token, 4)


def probe(
    *,
    budget_s: float,
    device: str,
    load: Loader,
    candidates: Sequence[str] = CANDIDATES,
    rates: dict[str, float] | None = None,
    timer: Callable[[Any], tuple[float, float]] = time_candidate,
) -> ProbeResult:
    """Time the candidates (most accurate first, stopping at the first that fits) and choose."""
    rates = rates or precision_rates(device)
    precision = fastest_precision(rates, device)
    rate = rates[precision] * 1e9
    timings: list[Timing] = []
    for key in candidates:
        estimate = round(2 * PARAMETERS.get(key, 1e9) * PROMPT_TOKENS / rate, 2)
        if estimate > SKIP_FACTOR * budget_s and key != candidates[-1]:
            note = (
                f"not loaded: {estimate:.1f} s estimated from this machine's {precision} rate "
                f"({rates[precision]:.0f} GFLOP/s)"
            )
            timings.append(Timing(key, precision, estimate, note=note))
            continue
        started = time.perf_counter()
        generator = load(key, precision)
        loaded_s = round(time.perf_counter() - started, 2)
        prefill, per_token = timer(generator)
        del generator
        timing = Timing(key, precision, estimate, loaded_s, prefill, per_token)
        timings.append(timing)
        logger.info(
            "probe: %s %s: prefill %.2f s, %.3f s/token, expected %.2f s",
            key,
            precision,
            prefill,
            per_token,
            timing.expected_s,
        )
        if timing.expected_s <= budget_s:
            break
    return _choose(timings, budget_s, rates)


def _choose(timings: list[Timing], budget_s: float, rates: dict[str, float]) -> ProbeResult:
    measured = [timing for timing in timings if timing.measured]
    fitting = [timing for timing in measured if timing.expected_s <= budget_s]
    better = [timing.key for timing in timings if timing.expected_s > budget_s]
    if fitting:
        chosen = fitting[0]
        over = f"; {', '.join(better)} would take longer" if better else ""
        reason = (
            f"{chosen.key} ({chosen.precision}) is the most accurate candidate whose expected short answer "
            f"({chosen.expected_s:.1f} s) fits the {budget_s:g} s budget{over}"
        )
    else:
        chosen = min(measured, key=lambda timing: timing.expected_s)
        reason = (
            f"no candidate fits the {budget_s:g} s budget; {chosen.key} ({chosen.precision}) is the fastest "
            f"({chosen.expected_s:.1f} s expected)"
        )
    return ProbeResult(chosen.key, chosen.precision, reason, budget_s, tuple(timings), rates_gflops=rates)


def probe_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / "probe" / f"{key}.json"


def probe_read(path: Path) -> ProbeResult | None:
    try:
        return ProbeResult.from_dict(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def probe_write(path: Path, result: ProbeResult) -> None:
    """Written through a temporary file and a rename (a reader sees the whole result or none)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as handle:
        json.dump(result.as_dict(), handle, indent=2)
    Path(handle.name).rename(path)


def stamped(result: ProbeResult, machine: dict[str, Any]) -> ProbeResult:
    return ProbeResult(
        **{**result.__dict__, "machine": machine, "measured_at": datetime.now(UTC).isoformat(timespec="seconds")}
    )
