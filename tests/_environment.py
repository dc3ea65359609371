"""Loaded by pytest as a plugin (``-p tests._environment``), before Django.

The suite is hermetic: it runs its own Neo4j, Redis and Celery worker on
ports of its own with state under var/test, whatever the shell or .env say,
so it never touches a development or production stack.
"""

from __future__ import annotations

import os
from pathlib import Path

TEST_ENVIRONMENT = {
    "DJANGO_SETTINGS_MODULE": "ragkg.settings",
    # manage.py in a subprocess reads no .env: a developer's settings never reach the suite's commands.
    "RAGKG_DOTENV": "0",
    "RAGKG_STATE_DIR": "var/test",
    "DJANGO_DEBUG": "0",
    "DJANGO_SECRET_KEY": "test-secret-key",
    # The test stack serves plain http on 127.0.0.1 (tests/browser logs in over it).
    "RAGKG_HTTPS": "0",
    "DATABASE_URL": "",
    "NEO4J_URI": "bolt://127.0.0.1:17687",
    "NEO4J_USER": "neo4j",
    "NEO4J_PASSWORD": "ragkg-test-password",
    "NEO4J_DATABASE": "neo4j",
    "REDIS_URL": "redis://127.0.0.1:16379/0",
    "CELERY_BROKER_URL": "",
    "CELERY_RESULT_BACKEND": "",
    "WEB_PORT": "18000",
    "RAGKG_MANAGED_SERVICES": "neo4j,redis,celery,web,chain",
    "RAGKG_WORKER_QUEUES": "ingest,gpu",
    "RAGKG_MODEL_PROFILE": "offline",
    # The small generator: the tests check wiring and provenance, benchmarks measure the default (which
    # the browser tests' stack runs, tests/browser/conftest.py).
    "RAGKG_GENERATOR": "smollm2",
    # Converted model copies are keyed by package version and safe to share: kept beside the venv, so
    # a fresh clone converts each generator once per machine, not once per run.
    # The small generator's answers are often wrong, and the tests of wiring and provenance need its text
    # kept: no refusal of unsupported short answers here (the tests of that set it; the browser stack runs
    # the product's setting).
    "ANSWER_MIN_ANSWER_SUPPORT": "0",
    # Tests ask the same questions of changing stacks (stopped workers, full queues) and expect each ask to
    # run; the tests of the answer cache turn it on (tests/unit/answers/test_cache.py, tests/integration).
    "ANSWER_CACHE": "0",
    "RAGKG_MODEL_CACHE_DIR": str(Path.home() / ".cache" / "ragkg" / "models"),
    "HEALTH_CHECK_TIMEOUT": "3.0",
    "TRACING_EXPORTER": "memory",
    "ANSWER_MAX_NEW_TOKENS": "40",
    "LEDGER_ANCHOR_INTERVAL": "0",
    "CHAIN_RPC_URL": "http://127.0.0.1:18545",
    "CHAIN_ID": "31337",
    "CHAIN_CONFIRMATIONS": "1",
}

os.environ.update(TEST_ENVIRONMENT)
