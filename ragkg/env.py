"""Typed readers for environment variables.

Only ``ragkg.settings`` (and the service scripts, which read the same
settings) call these. Every reader fails loudly with the variable's name and
the offending value, so a typo in the environment stops the process at start
instead of surfacing later as odd behaviour.

``dotenv_load`` is the one exception to "the environment is the only input":
``manage.py`` calls it before Django loads the settings, so a command typed
by hand sees ``.env`` as the ``make`` targets do (scripts/with-env.sh).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, MutableMapping
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


def env_url_list(name: str, schemes: tuple[str, ...], *, environ: Mapping[str, str] | None = None) -> list[str]:
    """Comma-separated URLs, each with a scheme of ``schemes`` (none when unset or empty)."""
    urls = env_list(name, [], environ=environ)
    for url in urls:
        env_url(name, url, schemes, environ={name: url})
    return urls


# The defaults scripts/with-env.sh exports after .env when neither sets them: the local stack serves plain
# http on 127.0.0.1, so no https-only cookies or redirects unless RAGKG_HTTPS=1 (a deployment behind TLS).
DOTENV_DEFAULTS = {"RAGKG_HTTPS": "0"}
DOTENV_SWITCH = "RAGKG_DOTENV"  # "0": read no .env and add no defaults (the test suite sets it)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def dotenv_parse(text: str, *, source: str = ".env") -> list[tuple[str, str]]:
    """The ``KEY=VALUE`` lines of ``text``, read as scripts/with-env.sh reads them: blank lines and lines
    starting with ``#`` are skipped, the value is everything after the first ``=``, verbatim (no quotes
    removed, no spaces trimmed, no ``$`` expanded). A line without ``=`` or whose key is not a variable
    name is an error naming ``source`` and the line number (with-env.sh stops on the second and misreads
    the first as ``KEY=KEY``)."""
    pairs = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line == "" or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not _NAME.fullmatch(key):
            raise EnvError(f"{source}:{number}: {line[:40]!r} is not a KEY=VALUE line")
        pairs.append((key, value))
    return pairs


def dotenv_load(path: Path, environ: MutableMapping[str, str] = os.environ) -> list[str]:
    """Export ``path``'s settings (when the file exists) and ``DOTENV_DEFAULTS`` into ``environ``,
    setting only variables it does not have: the environment wins, even with an empty value (a blank
    ``RAGKG_HTTPS`` still gets its default, as in with-env.sh). Nothing at all with ``RAGKG_DOTENV=0``.
    Returns the names it set, in file order."""
    if environ.get(DOTENV_SWITCH) == "0":
        return []
    pairs = dotenv_parse(os.fsdecode(path.read_bytes()), source=str(path)) if path.is_file() else []
    added = []
    for key, value in pairs:
        if key not in environ:
            environ[key] = value
            added.append(key)
    for key, value in DOTENV_DEFAULTS.items():
        if not environ.get(key):
            environ[key] = value
            added += [] if key in added else [key]
    return added
