"""`manage.py backup` and `restore` on the real test stack: a round trip brings back the graph, the
change log with its anchor, and the vectors (in the database; this process's copy built again); a
damaged backup is refused and changes nothing."""

from __future__ import annotations

import io
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from neo4j import Driver
from pytest_django.fixtures import Settings

from apps.backup.graph import graph_counts
from apps.ingest.services import default_extractor, document_delete, upload_ingest
from apps.ledger.anchoring import anchors_advance
from apps.ledger.chain import chain_from_settings
from apps.ledger.models import Anchor, ChangeEntry
from apps.ledger.services import tree_head
from apps.vectors.registry import vector_registry, vector_registry_reset
from apps.vectors.store import store_count

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ADA = (
    "Ada Lovelace worked with Charles Babbage in London. "
    "Charles Babbage designed the Analytical Engine. "
    "Lovelace published the first algorithm in 1843."
)
BABBAGE = "Charles Babbage was born in London. He taught at Cambridge University."
CHUNKS = "MATCH (:Document {id: $id})-[:HAS_CHUNK]->(c:Chunk) RETURN c.id AS id, c.text AS text ORDER BY c.ord"


@pytest.fixture(autouse=True)
def vectors_dir(tmp_path: Path, settings: Settings) -> Path:
    settings.VECTORS_DIR = tmp_path / "vectors"
    settings.MEDIA_ROOT = tmp_path / "media"
    vector_registry_reset()
    return Path(settings.VECTORS_DIR)


def ingest(driver: Driver, name: str, text: str) -> str:
    [outcome] = upload_ingest(
        driver=driver, name=name, data=text.encode(), collection="lab", extractor=default_extractor(), actor="user:ana"
    )
    assert outcome.document_id, outcome
    return outcome.document_id


def state(driver: Driver, document_id: str) -> dict[str, Any]:
    """Everything the round trip must bring back."""
    chunks, _, _ = driver.execute_query(CHUNKS, id=document_id)
    anchor = Anchor.objects.get(state=Anchor.CONFIRMED)
    head = tree_head()
    return {
        "graph": graph_counts(driver=driver),
        "chunks": [(r["id"], r["text"]) for r in chunks],
        "ledger": (ChangeEntry.objects.count(), head.size, head.root),
        "vectors": (store_count("text"), vector_registry().get("text").count),
        "anchor": (anchor.tree_size, anchor.root),
        "on_chain": chain_from_settings(read_only=True).root_at(contract=anchor.contract, tree_size=anchor.tree_size),
    }


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


@pytest.fixture
def anchored(empty_graph: Driver, live_services: None) -> str:
    """One document ingested and the change log anchored once."""
    document = ingest(empty_graph, "ada.txt", ADA)
    report = anchors_advance()
    assert report.confirmed == [1], report
    return document


def test_round_trip_brings_back_graph_ledger_vectors_and_anchor(
    empty_graph: Driver, anchored: str, tmp_path: Path
) -> None:
    before = state(empty_graph, anchored)
    assert before["chunks"] and before["vectors"][0] == before["vectors"][1] > 0
    assert before["on_chain"] == before["anchor"][1]

    started = time.perf_counter()
    written = run("backup", str(tmp_path / "backup"))
    backup_s = time.perf_counter() - started
    assert "backup written" in written

    assert document_delete(driver=empty_graph, document_id=anchored, actor="curator:cy")
    ingest(empty_graph, "babbage.txt", BABBAGE)
    assert state(empty_graph, anchored)["ledger"] != before["ledger"]

    with pytest.raises(CommandError, match="--force"):
        run("restore", str(tmp_path / "backup"))

    started = time.perf_counter()
    restored = run("restore", str(tmp_path / "backup"), "--force")
    restore_s = time.perf_counter() - started
    assert "restore checked: ok" in restored, restored
    assert state(empty_graph, anchored) == before
    assert "in step with the graph" in run("vectors", "check")
    assert run("ledger", "verify", "--graph").strip().endswith("ok")
    logger.info(
        "%s",
        f"\nROUND TRIP: {before['graph']} ledger {before['ledger'][0]} vectors {before['vectors']}; "
        f"backup {backup_s:.2f}s, {size(tmp_path / 'backup')} bytes; restore {restore_s:.2f}s\n{restored}",
    )


def test_a_tampered_backup_is_refused_and_changes_nothing(empty_graph: Driver, anchored: str, tmp_path: Path) -> None:
    run("backup", str(tmp_path / "backup"))
    ingest(empty_graph, "babbage.txt", BABBAGE)
    changed = state(empty_graph, anchored)
    nodes = tmp_path / "backup" / "graph" / "nodes.jsonl"
    nodes.write_text(nodes.read_text().replace("Lovelace", "Lovelace!", 1))

    started = time.perf_counter()
    with pytest.raises(CommandError, match=r"damaged \(checksum differs: graph/nodes.jsonl\)"):
        run("restore", str(tmp_path / "backup"), "--force")
    refused_s = time.perf_counter() - started
    assert state(empty_graph, anchored) == changed
    logger.info("%s", f"TAMPERED: refused in {refused_s:.2f}s, state unchanged {changed['graph']}")


def test_a_tar_backup_round_trips(empty_graph: Driver, anchored: str, tmp_path: Path) -> None:
    before = state(empty_graph, anchored)
    run("backup", str(tmp_path / "ragkg.tar"))
    ingest(empty_graph, "babbage.txt", BABBAGE)
    assert "restore checked: ok" in run("restore", str(tmp_path / "ragkg.tar"), "--force")
    assert state(empty_graph, anchored) == before
