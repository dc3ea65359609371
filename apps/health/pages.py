"""View-model builders of the status page (a house convention beside services and selectors)."""

from __future__ import annotations

from typing import Any

from django.conf import settings


def generator_choice() -> dict[str, Any]:
    """Which generator answers and why: the setting, and for ``auto`` this machine's probe figures."""
    from apps.models.auto import auto_result
    from apps.models.engines import remote_engine
    from apps.models.registry import auto_reason, profile_specs

    engine = remote_engine()
    choice: dict[str, Any] = {
        "setting": settings.GENERATOR,
        "name": profile_specs().generator.name,
        "budget_s": settings.ANSWER_BUDGET_S,
        "engine": engine.where if engine is not None else "",
    }
    if settings.GENERATOR == "auto":
        measured = auto_result()
        choice["reason"] = auto_reason()
        choice["probe"] = measured.as_dict() if measured is not None else None
    return choice
