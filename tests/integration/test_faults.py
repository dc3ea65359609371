"""Faults on the real test stack: a worker killed during a generation, Redis stopped, the chain node
stopped during anchoring, and a full disk under the vector indexes. Each test brings the stack back
(``stack_restored``), so the tests after it find every service healthy."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from neo4j import Driver
from pytest_django.fixtures import Settings

from apps.accounts.roles import CURATOR
from apps.accounts.services import collection_ensure, role_set
from apps.answers.generation import WORKER_LOST
from apps.answers.services import BROKER_DOWN
from apps.graph import cypher
from apps.graph.driver import close_driver
from apps.graph.identity import content_id
from apps.ingest.jobs import QUEUE_DOWN
from apps.ingest.models import IngestJob
from apps.ingest.services import default_extractor, upload_ingest
from apps.ledger.anchoring import anchors_advance
from apps.ledger.chain import chain_from_settings
from apps.ledger.models import Anchor, ChangeEntry
from apps.ledger.tasks import anchor_task
from apps.ledger.verify import log_verify
from apps.vectors.persistence import MANIFEST, manifest_read, snapshot_read
from apps.vectors.registry import vector_registry, vector_registry_reset
from apps.vectors.services import vectors_add, vectors_search
from apps.vectors.types import VectorItem
from tests.conftest import LIVE, SERVICES, services
from tests.integration.test_answers import JOURNAL, QUESTION, SOCIETY
from tests.integration.test_ingest_worker_killed import worker_pool_processes
from tests.integration.test_vectors import (  # noqa: F401  (collection and vector_settings are fixtures)
    check_json,
    collection,
    embed,
    run,
    vector_settings,
)
from tests.support import BASE_DIR, anvil_rpc, manage, renames_append, wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
def stack_restored(live_services: None) -> Iterator[None]:
    """Whatever a test stops or kills, every live service is up again after it."""
    try:
        yield
    finally:
        services("up", *LIVE)
        close_driver()


def record(line: str) -> None:
    """Keep an observed timing (var/test/faults-timings.log) for docs/reliability.md."""
    with open(Path(settings.STATE_DIR) / "faults-timings.log", "a", encoding="utf-8") as log:
        log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n")


def seconds_since(start: float) -> float:
    return round(time.monotonic() - start, 1)


def real_db() -> sqlite3.Connection:
    """The test stack's own database (the one the worker and manage.py use, not the test's in-memory one)."""
    return sqlite3.connect(Path(settings.STATE_DIR) / "db.sqlite3", timeout=10)


# --- 1. the worker killed during a generation --------------------------------------------------


def latest_answer(scope: str) -> tuple[str, str, str] | None:
    with real_db() as db:
        row = db.execute(
            "SELECT id, state, error FROM answers_answer WHERE collections LIKE ? ORDER BY created_at DESC LIMIT 1",
            [f'%"{scope}"%'],
        ).fetchone()
    return None if row is None else (str(row[0]), str(row[1]), str(row[2]))


def celery_up(name: str = "celery", **env: str) -> None:
    started = subprocess.run(
        [*SERVICES, "up", name],
        cwd=BASE_DIR,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert started.returncode == 0, started.stdout + started.stderr


def test_a_worker_killed_during_a_generation_fails_the_answer_with_a_clear_message(
    stack_restored: None, tmp_path: Path
) -> None:
    scope = f"gen-kill-{uuid.uuid4().hex[:10]}"
    for name, text in {"journal.txt": JOURNAL, "society.txt": SOCIETY}.items():
        (tmp_path / name).write_text(text)
    ingested = manage("ingest", str(tmp_path), "--collection", scope, "--wait", "--json")
    assert ingested.returncode == 0, ingested.stderr
    # A fresh generation worker writing long answers: the generator loads, then writes up to 400 tokens.
    services("down", "celery-gpu")
    celery_up("celery-gpu", ANSWER_MAX_NEW_TOKENS="400")
    try:
        asker = subprocess.Popen(
            [sys.executable, "manage.py", "ask", QUESTION, "--collection", scope, "--json"],
            cwd=BASE_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        answer = wait_for(
            "the generation", lambda: (row := latest_answer(scope)) and row[1] == "generating" and row, 120, 0.05
        )
        killed_at = time.monotonic()
        for pid in worker_pool_processes("celery-gpu"):
            os.kill(pid, signal.SIGKILL)
        out, err = asker.communicate(timeout=120)
        waited = seconds_since(killed_at)
    finally:
        services("down", "celery-gpu")
        celery_up("celery-gpu")
    result = json.loads(out)
    assert asker.returncode == 1, out + err
    assert result["state"] == "failed" and result["error"] == WORKER_LOST
    assert result["sources"], "the evidence is still returned"
    assert waited < 60, f"the asker waited {waited} s"
    assert latest_answer(scope) == (answer[0], "failed", WORKER_LOST)
    record(f"worker killed mid-generation: the answer failed {waited} s after the kill")


# --- 3. Redis stopped ------------------------------------------------------------------------------


@pytest.fixture
def redis_corpus(empty_graph: Driver, tmp_path: Path, settings: Settings) -> str:
    settings.VECTORS_DIR = tmp_path / "vectors"
    scope = f"redis-stop-{uuid.uuid4().hex[:10]}"
    for name, text in {"journal.txt": JOURNAL, "society.txt": SOCIETY}.items():
        upload_ingest(
            driver=empty_graph, name=name, data=text.encode(), collection=scope, extractor=default_extractor()
        )
    collection_ensure(name=scope, public=True)
    return scope


def upload(client: Client, scope: str) -> Any:
    note = SimpleUploadedFile("note.txt", b"The Severn Bridge carries the motorway across the estuary.")
    return client.post("/curation/documents/upload/", {"collection": scope, "files": [note]})


def healthz() -> tuple[int, dict[str, Any]]:
    response = Client().get("/healthz")
    return response.status_code, response.json()


@pytest.mark.django_db(transaction=True)
def test_redis_stopped_asking_and_uploading_answer_503_quickly_and_recover(
    stack_restored: None, redis_corpus: str
) -> None:
    staff = Client()  # a curator: uploads go through Curation → Documents
    staff.force_login(User.objects.create_user("uploader", password="x"))
    role_set(username="uploader", role=CURATOR)
    services("down", "redis")

    asked = time.monotonic()
    answer = Client().post(
        "/api/ask", {"question": QUESTION, "collections": [redis_corpus]}, content_type="application/json"
    )
    ask_seconds = seconds_since(asked)
    assert answer.status_code == 503 and answer.json() == {"error": BROKER_DOWN, "stage": "generation"}

    sent = time.monotonic()
    refused = upload(staff, "redis-uploads")
    upload_seconds = seconds_since(sent)
    assert refused.status_code == 503 and "Redis broker" in refused.content.decode()
    [job] = IngestJob.objects.filter(collection="redis-uploads")
    assert job.state == IngestJob.FAILED and job.error == QUEUE_DOWN, "never left queued with no task behind it"
    assert ask_seconds < 15 and upload_seconds < 15, (ask_seconds, upload_seconds)

    status, health = healthz()
    assert status == 503 and health["checks"]["redis"]["status"] == "down"
    assert "cannot reach redis://" in health["checks"]["redis"]["detail"]

    back = time.monotonic()
    services("up", "redis")
    wait_for("a green /healthz", lambda: healthz()[0] == 200, 90, 1)
    recovered = seconds_since(back)
    accepted = upload(staff, "redis-uploads")
    assert accepted.status_code == 302, accepted.content
    retrieval = Client().post(
        "/api/ask",
        {"question": QUESTION, "collections": [redis_corpus], "generate": False},
        content_type="application/json",
    )
    assert retrieval.status_code == 200 and retrieval.json()["sources"]
    record(
        f"Redis stopped: /api/ask 503 in {ask_seconds} s, upload 503 in {upload_seconds} s; "
        f"/healthz green {recovered} s after the restart"
    )


# --- 4. the chain node stopped during anchoring ------------------------------------------------


@pytest.mark.django_db
def test_the_chain_node_stopped_during_anchoring(stack_restored: None, settings: Settings) -> None:
    settings.CHAIN_CONFIRMATIONS = 3
    renames_append(2)
    contract = anchors_advance().contract
    anvil_rpc("anvil_mine", [2])
    assert anchors_advance().confirmed == [2]
    renames_append(3)
    assert anchors_advance().sent == [5]  # sent, one confirmation of three: the node stops now
    assert Anchor.objects.get(tree_size=5).state == Anchor.SENT

    services("down", "chain")
    tried = time.monotonic()
    round_ = anchor_task()
    failed_in = seconds_since(tried)
    assert "unreachable" in round_["error"] and failed_in < 30
    assert not Anchor.objects.filter(tree_size=5, state=Anchor.CONFIRMED).exists()
    renames_append(1)  # the log goes on without the chain

    services("up", "chain")
    rounds = 0
    while not Anchor.objects.filter(tree_size=6, state=Anchor.CONFIRMED).exists():
        rounds += 1
        assert rounds <= 6, list(Anchor.objects.values("tree_size", "state", "error"))
        result = anchor_task()
        assert not result.get("error"), result
        anvil_rpc("anvil_mine", [3])
    assert anchors_advance().contract == contract
    assert Anchor.objects.get(tree_size=6).state == Anchor.CONFIRMED
    report = log_verify(chain=chain_from_settings())
    assert report.ok, report.problems
    assert ChangeEntry.objects.count() == 6
    record(f"chain stopped: the anchor task failed in {failed_in} s; anchored after {rounds} round(s)")


# --- 5. a full disk under the local vector snapshots ---------------------------------------------------


@pytest.fixture
def small_disk(vector_settings: None) -> Iterator[Path]:  # noqa: F811
    """A 512 KiB tmpfs mounted on VECTORS_DIR (the test runs as root)."""
    directory = Path(settings.VECTORS_DIR)
    directory.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(directory)], capture_output=True)
    assert mounted.returncode == 0, f"cannot mount a tmpfs: {mounted.stderr!r}"
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=True)


def fill(directory: Path) -> Path:
    """Write a file until the disk is full (unbuffered, so closing it writes nothing more)."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as out:
        try:
            while out.write(b"\0" * 4096):
                pass
        except OSError:
            pass
    return filler


@pytest.mark.django_db
def test_a_full_disk_under_the_local_snapshots_loses_no_vector(
    neo4j_driver: Driver,
    collection: dict[str, Any],  # noqa: F811
    small_disk: Path,
    settings: Settings,
) -> None:
    """The vectors are stored in the database; the host's disk holds only its snapshots. A full disk
    there fails a snapshot save (logged), keeps the previous snapshot intact, and loses nothing."""
    settings.VECTORS_SNAPSHOT_MIN_VECTORS, settings.VECTORS_SNAPSHOT_FRACTION = 1, 0.0  # a snapshot per change
    vector_registry_reset()
    name = collection["name"]
    report, ok = check_json("--collection", name, "--repair")
    assert ok and report["added"] == 6
    assert vector_registry().get("text").count == 6  # the copy applies the repair, and saves a snapshot
    text_dir = small_disk / "text"
    saved = manifest_read(text_dir)
    assert saved.count == 6

    # A chunk reaches the graph; its vector is stored while the snapshot disk is full.
    chunk = {"id": content_id("chunk", collection["document"], "late"), "document_id": collection["document"]}
    run(neo4j_driver, cypher.CHUNKS_CREATE, rows=[{**chunk, "text": "Charles Babbage in the fog."}])
    filler = fill(small_disk)
    vectors_add(space="text", items=[VectorItem(chunk["id"], "Chunk", name)], vectors=embed(["late"]))
    [hits] = vectors_search(space="text", queries=embed(["late"]), k=10, collections={name})
    assert chunk["id"] in {hit.node_id for hit in hits}, "served at once, though its snapshot could not be saved"
    assert manifest_read(text_dir) == saved, "the manifest still names the previous snapshot"
    assert snapshot_read(text_dir).manifest.count == 6, "and its files are intact (checksums verified)"
    assert sorted(p.name for p in text_dir.iterdir() if p.name.endswith(".tmp")) == []
    report, ok = check_json("--collection", name)
    assert ok and report["stored"] == report["host"] == 7

    filler.unlink()  # space comes back: the next snapshot is saved
    vector_registry().snapshot("text")
    after = manifest_read(text_dir)
    assert after.version == saved.version + 1 and after.count == 7 and (text_dir / MANIFEST).is_file()
