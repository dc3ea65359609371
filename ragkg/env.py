"""Typed readers for environment variables.

Only ``ragkg.settings`` (and the service scripts, which read the same
settings) call these. Every reader fails loudly with the variable's name and
the offending value, so a typo in the environment stops the process at start
instead of surfacing later as odd behaviour.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


class EnvError(ValueError):
    """An environment variable is missing or holds an unusable value."""


def _raw(name: str, environ: Mapping[str, str] | None) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def env_str(name: str, default: str | None = None, *, environ: Mapping[str, str] | None = None) -> str:
    """A string; without a default the variable is required."""
    value = _raw(name, environ)
    if value is not None:
        return value
    if default is None:
        raise EnvError(f"{name} is required but not set")
    return default


def env_bool(name: str, default: bool, *, environ: Mapping[str, str] | None = None) -> bool:
    value = _raw(name, environ)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise EnvError(f"{name}={value!r} is not a boolean (use one of 1/0, true/false, yes/no, on/off)")


def env_int(
    name: str,
    default: int,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    value = _raw(name, environ)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise EnvError(f"{name}={value!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise EnvError(f"{name}={number} is below the minimum {minimum}")
    if maximum is not None and number > maximum:
        raise EnvError(f"{name}={number} is above the maximum {maximum}")
    return number


def env_float(
    name: str,
    default: float,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    environ: Mapping[str, str] | None = None,
) -> float:
    value = _raw(name, environ)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise EnvError(f"{name}={value!r} is not a number") from None
    if minimum is not None and number < minimum:
        raise EnvError(f"{name}={number} is below the minimum {minimum}")
    if maximum is not None and number > maximum:
        raise EnvError(f"{name}={number} is above the maximum {maximum}")
    return number


def env_list(name: str, default: list[str], *, environ: Mapping[str, str] | None = None) -> list[str]:
    """A comma-separated list; empty items are dropped."""
    value = _raw(name, environ)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_choice(name: str, default: str, choices: tuple[str, ...], *, environ: Mapping[str, str] | None = None) -> str:
    value = env_str(name, default, environ=environ)
    if value not in choices:
        raise EnvError(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


def env_path(name: str, default: Path, *, base: Path, environ: Mapping[str, str] | None = None) -> Path:
    """A filesystem path; relative values are resolved against ``base``."""
    value = _raw(name, environ)
    path = default if value is None else Path(value).expanduser()
    return path if path.is_absolute() else (base / path).resolve()


def env_url(name: str, default: str, schemes: tuple[str, ...], *, environ: Mapping[str, str] | None = None) -> str:
    """A URL whose scheme must be one of ``schemes``."""
    value = env_str(name, default, environ=environ)
    scheme, sep, rest = value.partition("://")
    if not sep or scheme not in schemes or not rest:
        raise EnvError(f"{name}={value!r} is not a URL with scheme {' or '.join(schemes)}")
    return value
