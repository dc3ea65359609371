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


FEED_PROBE = """
import tempfile, threading
from pathlib import Path
import numpy as np
from django.db import connection
from apps.vectors.ids import vector_ids
from apps.vectors.models import StoredVector
from apps.vectors.registry import SyncPolicy, VectorRegistry
from apps.vectors.store import store_add, store_head, store_remove
from apps.vectors.types import SpaceConfig, VectorItem
config = SpaceConfig(space="text", dim=8, model="feed-probe", index_type="flat")
reader = VectorRegistry(Path(tempfile.mkdtemp()), lambda space: config, SyncPolicy(interval=0.0))
done = threading.Event()
def write(worker):
    for batch in range(25):
        names = [f"w{worker}-{batch}-{row}" for row in range(4)]
        items = [VectorItem(name, "Chunk", "c") for name in names]
        store_add(config, vector_ids(names), items, np.random.rand(4, 8).astype("float32"))
        if batch % 5 == 4:
            store_remove(config, vector_ids(names[:1]))
    connection.close()
def follow():
    while not done.is_set():
        reader.get("text")
    connection.close()
follower = threading.Thread(target=follow)
follower.start()
writers = [threading.Thread(target=write, args=(worker,)) for worker in range(4)]
for thread in writers:
    thread.start()
for thread in writers:
    thread.join()
done.set()
follower.join()
live = StoredVector.objects.filter(space="text", removed=False).count()
print("HEAD", store_head("text").seq, "LIVE", live, "COPY", reader.get("text").count)
"""


def test_concurrent_vector_writers_commit_in_feed_order_and_a_follower_misses_none(postgres_url: str) -> None:
    """Four writer threads (own connections) add and remove vectors while a reader follows the feed as fast as
    it can: every change takes one sequence number, and the follower's copy ends equal to the store (a change
    committed after a later-numbered one was read would be missed for good)."""
    assert manage("migrate", "--noinput", DATABASE_URL=postgres_url).returncode == 0
    probe = manage("shell", "-c", FEED_PROBE, DATABASE_URL=postgres_url)
    assert probe.returncode == 0, probe.stderr
    [line] = [line for line in probe.stdout.splitlines() if line.startswith("HEAD ")]
    head, live, copy = (int(value) for value in line.split()[1::2])
    assert head == 4 * (25 + 5) and live == 4 * (25 * 4 - 5) and copy == live, probe.stdout
