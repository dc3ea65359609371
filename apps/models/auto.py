"""``RAGKG_GENERATOR=auto`` and ``RAGKG_GENERATOR_DTYPE=auto`` on this machine: the probe's cached choice
(``apps.models.probe``), run by ``manage.py models --probe`` or by the generation worker at start, or,
before any probe ran here, the rule by CPU flags and GPU (said so wherever the choice is shown)."""

from __future__ import annotations

import fcntl
import functools
import logging
import time
from pathlib import Path

from django.conf import settings

from apps.models import probe
from apps.models.probe import ProbeResult

logger = logging.getLogger(__name__)

RECHECK_SECONDS = 10.0  # how often a process without a result looks for one again
_missing_since: dict[Path, float] = {}


def probe_device(device_preference: str) -> str:
    from apps.models.devices import _nvidia_gpu_present

    return "cuda" if device_preference != "cpu" and _nvidia_gpu_present() else "cpu"


@functools.cache
def result_path(device_preference: str, cache_dir: Path, budget_s: float) -> Path:
    """Where this machine's probe result lives (its name covers the machine, versions and budget)."""
    from apps.models.generator import OFFLINE_GENERATORS

    machine = probe.machine_fingerprint(probe_device(device_preference))
    versions = {key: OFFLINE_GENERATORS[key].version for key in probe.CANDIDATES}
    return probe.probe_path(cache_dir, probe.cache_key(machine, budget_s, versions))


_results: dict[Path, ProbeResult] = {}


def auto_result(device_preference: str | None = None) -> ProbeResult | None:
    """This machine's probe result under the current settings, or None when none was measured yet."""
    path = result_path(device_preference or settings.MODEL_DEVICE, settings.MODEL_CACHE_DIR, settings.ANSWER_BUDGET_S)
    if path in _results:
        return _results[path]
    if time.monotonic() - _missing_since.get(path, -RECHECK_SECONDS) < RECHECK_SECONDS:
        return None
    found = probe.probe_read(path)
    if found is None:
        _missing_since[path] = time.monotonic()
        return None
    _results[path] = found
    return found


def auto_probe(*, force: bool = False) -> ProbeResult:
    """Measure the candidates now (unless a result exists and ``force`` is off) and keep the result;
    one process at a time (a lock file: the generation worker's processes start together)."""
    from apps.models.generator import OFFLINE_GENERATORS, load_offline

    device_preference = settings.MODEL_DEVICE
    path = result_path(device_preference, settings.MODEL_CACHE_DIR, settings.ANSWER_BUDGET_S)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        existing = None if force else probe.probe_read(path)
        if existing is not None:
            _results[path] = existing
            return existing
        device = probe_device(device_preference)

        def load(key: str, precision: str) -> object:
            return load_offline(
                OFFLINE_GENERATORS[key], cache_root=settings.MODEL_CACHE_DIR, device=device, dtype=precision
            )

        logger.info("probing the generator candidates on this machine (budget %.1f s)", settings.ANSWER_BUDGET_S)
        result = probe.stamped(
            probe.probe(budget_s=settings.ANSWER_BUDGET_S, device=device, load=load),
            probe.machine_fingerprint(device),
        )
        probe.probe_write(path, result)
    _results[path] = result
    _missing_since.pop(path, None)
    logger.info("generator auto: %s", result.reason)
    return result
