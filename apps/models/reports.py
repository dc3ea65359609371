"""What `manage.py models` says about each role: where its model loads from and, on request,
whether it loads here and how long that takes."""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field, replace

from apps.models.registry import ModelSpec

logger = logging.getLogger(__name__)

HUB_NEEDS_INTERNET = "not loaded: hub profile needs internet (HF_HUB_OFFLINE is set)"


@dataclass(frozen=True)
class ModelReport:
    """``status``: listed (not loaded), off (role disabled), ok, failed, or skipped (hub offline)."""

    role: str
    name: str
    source: str
    location: str
    status: str
    detail: str = ""
    seconds: float | None = None
    options: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _summary(model: object) -> str:
    parts = [f"{key} {getattr(model, key)}" for key in ("dim", "device") if hasattr(model, key)]
    return ", ".join(parts)


def _describe(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def spec_report(role: str, spec: ModelSpec[object] | None, *, load: bool, hub_offline: bool) -> ModelReport:
    """Describe ``spec``; with ``load``, load it afresh (not from the process cache) and time it.
    A hub model is not tried while the hub is offline."""
    if spec is None:
        return ModelReport(role, "off", "", "", "off", detail="off in this profile (RAGKG_CLIP_MODEL)")
    report = ModelReport(role, spec.name, spec.source, spec.location, "listed", options=dict(spec.options))
    if not load:
        return report
    if spec.needs_internet and hub_offline:
        return replace(report, status="skipped", detail=HUB_NEEDS_INTERNET)
    started = time.perf_counter()
    try:
        model = spec.loader()
    except Exception as exc:  # reported, and the command exits 1
        logger.warning("%s %s failed to load", role, spec.name, exc_info=True)
        status, detail = "failed", _describe(exc)
    else:
        status, detail = "ok", _summary(model)
    seconds = round(time.perf_counter() - started, 2)
    return replace(report, status=status, detail=detail, seconds=seconds)
