"""Fixtures shared by the whole suite.

Integration tests ask for ``live_services``: the real Neo4j, Redis and one
Celery worker, started through scripts/services.py (the same code `make up`
uses) on the test ports, and stopped at the end of the session unless they
were already running before it.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from neo4j import Driver

from apps.graph.driver import close_driver, get_driver

BASE_DIR = Path(__file__).resolve().parent.parent
SERVICES = [sys.executable, str(BASE_DIR / "scripts" / "services.py")]
LIVE = ["redis", "neo4j", "chain", "celery"]


def services(
    *args: str, check: bool = True, env: dict[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run scripts/services.py with the test environment, changed by ``env`` for the processes it starts
    (a None value removes the variable: the setting's own default then)."""
    changed = {**os.environ, **(env or {})}
    return subprocess.run(
        [*SERVICES, *args],
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        check=check,
        timeout=300,
        env={name: value for name, value in changed.items() if value is not None},
    )


def _running() -> set[str]:
    rows = json.loads(services("status", "--json").stdout)
    return {name for name, row in rows.items() if row["running"]}


@contextlib.contextmanager
def web_server_running(env: dict[str, str | None] | None = None, *, restart: bool = False) -> Iterator[str]:
    """The test web server's base URL; started here (with ``env`` added) unless it already ran, and then stopped.
    With ``restart``, one already running is stopped first (so ``env`` applies), and started again after."""
    before = _running()
    if restart and "web" in before:
        services("down", "web")
    result = services("up", "web", check=False, env=env)
    if result.returncode != 0:
        pytest.fail(f"could not start the test web server:\n{result.stdout}\n{result.stderr}")
    yield f"http://{settings.WEB_HOST}:{settings.WEB_PORT}"
    if "web" not in before or restart:
        services("down", "web")
    if restart and "web" in before:
        services("up", "web")


@pytest.fixture(scope="session")
def live_services() -> Iterator[None]:
    before = _running()
    result = services("up", *LIVE, check=False)
    if result.returncode != 0:
        pytest.fail(f"could not start the test services:\n{result.stdout}\n{result.stderr}")
    yield
    close_driver()
    started = [name for name in LIVE if name not in before]
    if started:
        services("down", *started)


@pytest.fixture
def neo4j_driver(live_services: None) -> Iterator[Driver]:
    driver = get_driver()
    yield driver


@pytest.fixture
def empty_graph(neo4j_driver: Driver) -> Driver:
    """The test Neo4j with every node removed (the schema stays)."""
    neo4j_driver.execute_query("MATCH (n) DETACH DELETE n", database_=settings.NEO4J_DATABASE)
    return neo4j_driver


@pytest.fixture(scope="session", autouse=True)
def ledger_maintenance() -> Iterator[None]:
    """Let the test harness empty the append-only change log between tests (apps/ledger/maintenance.py);
    tests of the refusal itself turn it off with ``maintenance(False)``."""
    from apps.ledger.maintenance import maintenance_set

    maintenance_set(True)
    yield
    maintenance_set(False)
