"""The relational database on PostgreSQL through DATABASE_URL (a real, throwaway server)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.postgres import postgres_server
from tests.support import free_port, manage

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    with postgres_server() as url:
        yield url


def test_migrations_and_health_on_postgresql(postgres_url: str) -> None:
    before = manage("doctor", "--only", "database", "--json", DATABASE_URL=postgres_url)
    assert before.returncode == 1
    assert json.loads(before.stdout)["checks"]["database"]["fix"] == "make migrate"

    migrate = manage("migrate", "--noinput", DATABASE_URL=postgres_url)
    assert migrate.returncode == 0, migrate.stderr

    after = manage("doctor", "--only", "database", "--json", DATABASE_URL=postgres_url)
    assert after.returncode == 0, after.stdout + after.stderr
    assert json.loads(after.stdout)["checks"]["database"]["detail"] == "postgresql, migrations applied"


def test_postgresql_down_is_named_with_its_fix() -> None:
    port = free_port()
    result = manage("doctor", "--only", "database", "--json", DATABASE_URL=f"postgres://ragkg@127.0.0.1:{port}/ragkg")
    assert result.returncode == 1
    check = json.loads(result.stdout)["checks"]["database"]
    assert check["status"] == "down"
    assert "OperationalError" in check["detail"]
    assert check["fix"] == "start PostgreSQL at DATABASE_URL (or fix DATABASE_URL), then make migrate"


APPEND_ONLY_PROBE = """
from django.db import DatabaseError, connection, transaction
from apps.ledger.content import entity_content
from apps.ledger.services import Change, entries_append
from apps.ledger.verify import log_verify
before = entity_content(entity_id="e", name="a", type_="ORG")
after = entity_content(entity_id="e", name="b", type_="ORG")
with transaction.atomic():
    entries_append(actor="probe", changes=[Change("entity.renamed", "Entity", "e", before, after)])
for statement in (
    "UPDATE ledger_changeentry SET actor = 'mallory'",
    "DELETE FROM ledger_changeentry",
    "TRUNCATE ledger_changeentry CASCADE",
    "UPDATE ledger_snapshot SET content = '{}'",
):
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(statement)
        print("ALLOWED", statement)
    except DatabaseError as exc:
        print("REFUSED", "append-only" in str(exc))
print("VERIFY", log_verify(chain=None).ok)
"""


def test_the_change_log_is_append_only_on_postgresql(postgres_url: str) -> None:
    assert manage("migrate", "--noinput", DATABASE_URL=postgres_url).returncode == 0
    probe = manage("shell", "-c", APPEND_ONLY_PROBE, DATABASE_URL=postgres_url)
    assert probe.returncode == 0, probe.stderr
    lines = probe.stdout.split("\n")
    assert lines.count("REFUSED True") == 4 and "VERIFY True" in lines, probe.stdout
