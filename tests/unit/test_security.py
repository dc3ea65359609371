"""Production security settings: with RAGKG_HTTPS on (the default when DJANGO_DEBUG=0) the deploy
checks pass and responses carry the secure headers and cookie flags; with it off (``make run``, the
test stack) plain http keeps working."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
HOST = "ragkg.example.org"

PROBE = f"""
import json, django
django.setup()
from django.conf import settings
from django.test import Client
client = Client(SERVER_NAME="{HOST}")
plain = client.get("/accounts/login/")
secure = client.get("/accounts/login/", secure=True)
cookie = secure.cookies["csrftoken"]
print(json.dumps({{
    "plain": [plain.status_code, plain.get("Location", "")],
    "secure": secure.status_code,
    "headers": {{k: secure.get(k, "") for k in (
        "Strict-Transport-Security", "X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy"
    )}},
    "csrf_cookie": {{"secure": bool(cookie["secure"]), "httponly": bool(cookie["httponly"])}},
    "session_cookie": [settings.SESSION_COOKIE_SECURE, settings.SESSION_COOKIE_HTTPONLY],
}}))
"""


def production_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "RAGKG_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="ragkg.settings",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="k3y-" + "production-grade-secret-of-enough-length-and-variety-0123456789",
        DJANGO_ALLOWED_HOSTS=HOST,
        DJANGO_CSRF_TRUSTED_ORIGINS=f"https://{HOST}",
        RAGKG_STATE_DIR=str(tmp_path),
        LEDGER_ANCHOR_INTERVAL="0",
        RAGKG_DOTENV="0",  # a production box: no development .env, no make defaults
        **extra,
    )
    return env


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_check_deploy_passes_in_production(tmp_path: Path) -> None:
    result = run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        production_env(tmp_path),  # RAGKG_HTTPS unset: on, because DJANGO_DEBUG=0
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_flags_plain_http(tmp_path: Path) -> None:
    result = run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        production_env(tmp_path, RAGKG_HTTPS="0"),
    )
    assert result.returncode != 0
    assert "security.W008" in result.stderr + result.stdout  # SECURE_SSL_REDIRECT


def test_production_responses_carry_the_secure_headers_and_cookie_flags(tmp_path: Path) -> None:
    result = run([sys.executable, "-c", PROBE], production_env(tmp_path, RAGKG_HTTPS="1"))
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["plain"] == [301, f"https://{HOST}/accounts/login/"]
    assert seen["secure"] == 200
    assert seen["headers"] == {
        "Strict-Transport-Security": "max-age=31536000; includeSubDomains; preload",
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "same-origin",
    }
    assert seen["csrf_cookie"] == {"secure": True, "httponly": True}
    assert seen["session_cookie"] == [True, True]


@pytest.mark.django_db
def test_the_test_stack_serves_plain_http(client: Client) -> None:
    assert not settings.DEBUG and not settings.HTTPS  # tests/_environment.py: RAGKG_HTTPS=0
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert "Strict-Transport-Security" not in response
    assert not response.cookies["csrftoken"]["secure"]
    assert response["X-Frame-Options"] == "DENY" and response["X-Content-Type-Options"] == "nosniff"
