"""Settings read the environment once, at start, and refuse bad values."""

import os
import subprocess
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]


def load_settings(**overrides: str) -> subprocess.CompletedProcess[str]:
    code = (
        "from django.conf import settings; import json; "
        "print(json.dumps({'db': settings.DATABASES['default'], 'broker': settings.CELERY_BROKER_URL}, default=str))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "ragkg.settings", **overrides}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=60
    )


def test_postgresql_through_database_url() -> None:
    result = load_settings(DATABASE_URL="postgres://ragkg:secret@db.example:5433/ragkg")
    assert result.returncode == 0, result.stderr
    assert '"ENGINE": "django.db.backends.postgresql"' in result.stdout
    assert '"HOST": "db.example"' in result.stdout
    assert '"PORT": 5433' in result.stdout


def test_sqlite_is_the_default_under_the_state_dir() -> None:
    result = load_settings(DATABASE_URL="", RAGKG_STATE_DIR="/tmp/ragkg-state")
    assert result.returncode == 0, result.stderr
    assert '"ENGINE": "django.db.backends.sqlite3"' in result.stdout
    assert "/tmp/ragkg-state/db.sqlite3" in result.stdout


def test_broker_defaults_to_redis_url() -> None:
    result = load_settings(REDIS_URL="redis://127.0.0.1:6400/2", CELERY_BROKER_URL="")
    assert '"broker": "redis://127.0.0.1:6400/2"' in result.stdout


def test_bad_values_stop_the_process_with_the_variable_named() -> None:
    cases = {
        "NEO4J_URI": ("http://127.0.0.1:7474", "NEO4J_URI='http://127.0.0.1:7474' is not a URL with scheme"),
        "WEB_PORT": ("eighty", "WEB_PORT='eighty' is not an integer"),
        "RAGKG_MODEL_PROFILE": ("cloud", "RAGKG_MODEL_PROFILE='cloud' is not one of offline, hub"),
        "RAGKG_MANAGED_SERVICES": ("neo4j,mongo", "RAGKG_MANAGED_SERVICES names unknown services: mongo"),
        "DATABASE_URL": ("mysql://x/y", "DATABASE_URL='mysql://x/y' is not a URL with scheme"),
    }
    for name, (value, message) in cases.items():
        result = load_settings(**{name: value})
        assert result.returncode != 0, name
        assert message in result.stderr, (name, result.stderr[-500:])


def test_secret_key_required_outside_debug() -> None:
    result = load_settings(DJANGO_DEBUG="0", DJANGO_SECRET_KEY="")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is required" in result.stderr
    assert load_settings(DJANGO_DEBUG="1", DJANGO_SECRET_KEY="").returncode == 0


def test_faiss_loads_without_printing_the_builds_it_did_not_find() -> None:
    """faiss's loader logs every CPU build it tries and lacks, with a ModuleNotFoundError, before it
    loads one: a process with the project's logging says nothing of it (and still loads faiss)."""
    code = "import django; django.setup(); import faiss; print('dimension', faiss.IndexFlatIP(4).d)"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "ragkg.settings", "DJANGO_DEBUG": "1", "LOG_LEVEL": "INFO"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "dimension 4" in done.stdout
    assert "Could not load library" not in done.stderr and "ModuleNotFoundError" not in done.stderr


def test_the_first_command_on_a_new_machine_can_open_sqlite(tmp_path: Path) -> None:
    """SQLite makes its file but not the folder: whichever command opens the database first (before
    `services.py up` made the state dir) finds the folder there instead of "unable to open database file"."""
    state = tmp_path / "new" / "state"
    code = (
        "import django; django.setup(); from django.db import connection; connection.ensure_connection(); print('ok')"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "ragkg.settings", "DJANGO_DEBUG": "1", "DATABASE_URL": ""}
    env["RAGKG_STATE_DIR"] = str(state)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr
    assert (state / "db.sqlite3").is_file()
