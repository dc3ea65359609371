"""Faults that need Neo4j itself to go away: stopped in the middle of an ingestion and of questions on the
shared test stack. (A restart of a whole private stack, after which the graph, the vector index, the change
log and the anchors must still agree, is tests/integration/test_stack_lifecycle.py.)"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from neo4j import Driver

from apps.accounts.services import collection_ensure
from apps.graph.driver import close_driver, get_driver
from tests.conftest import services
from tests.integration.test_answers import JOURNAL, QUESTION, SOCIETY
from tests.integration.test_faults import real_db, record, seconds_since, stack_restored  # noqa: F401
from tests.support import manage, wait_for

pytestmark = pytest.mark.integration

PASSAGES = 400  # a warm worker ingests them in about 10 s; the job is watched every 50 ms


def job_state(job_id: str, **env: str) -> dict[str, Any]:
    shown = manage("ingest_jobs", job_id, "--json", **env)
    assert shown.returncode in (0, 1), shown.stderr
    return dict(json.loads(shown.stdout))


def logged_documents(scope: str) -> dict[str, set[str]]:
    """The documents of ``scope`` that the change log says exist now, each with its units (latest entry wins)."""
    latest: dict[str, str | None] = {}
    with real_db() as db:
        for subject, after in db.execute(
            "SELECT subject_id, after FROM ledger_changeentry WHERE subject_kind = 'Document' ORDER BY seq"
        ):
            latest[str(subject)] = after
        hashes = [after for after in latest.values() if after]
        contents: dict[str, Any] = {}
        for sha, content in db.execute(
            f"SELECT sha256, content FROM ledger_snapshot WHERE sha256 IN ({','.join('?' * len(hashes))})", hashes
        ):
            contents[str(sha)] = json.loads(content)
    documents = [contents[after] for after in latest.values() if after in contents]
    return {str(doc["id"]): {str(unit) for unit, _ in doc["units"]} for doc in documents if doc["collection"] == scope}


def graph_documents(driver: Driver, scope: str) -> dict[str, set[str]]:
    records, _, _ = driver.execute_query(
        "MATCH (d:Document {collection: $collection}) OPTIONAL MATCH (d)-[:HAS_CHUNK]->(c:Chunk) "
        "RETURN d.id AS id, collect(c.id) AS chunks",
        {"collection": scope},
        database_=settings.NEO4J_DATABASE,
    )
    return {str(record["id"]): {str(chunk) for chunk in record["chunks"]} for record in records}


def started_job(folder: Path, scope: str) -> str:
    started = manage("ingest", str(folder), "--collection", scope, "--json")
    assert started.returncode == 0, started.stdout + started.stderr
    return str(json.loads(started.stdout)["id"])


def writing(job_id: str) -> bool:
    """The job runs (a worker claimed it); read straight from the stack's database, as a job of a warm
    worker can finish in seconds (``manage.py ingest_jobs`` alone takes that long to start)."""
    with real_db() as db:
        row = db.execute("SELECT state, percent FROM ingest_ingestjob WHERE id = ?", [uuid.UUID(job_id).hex]).fetchone()
    assert row is not None and row[0] not in ("done", "failed"), f"the job ended before Neo4j could be stopped: {row}"
    return bool(row[0] == "running")


@pytest.mark.django_db(transaction=True)
def test_neo4j_stopped_during_an_ingestion_and_during_questions(stack_restored: None, tmp_path: Path) -> None:  # noqa: F811
    scope = f"neo4j-stop-{uuid.uuid4().hex[:10]}"
    first = tmp_path / "first"
    first.mkdir()
    (first / "journal.txt").write_text(JOURNAL)
    (first / "society.txt").write_text(SOCIETY)
    done = manage("ingest", str(first), "--collection", scope, "--wait", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    collection_ensure(name=scope, public=True)
    folder = tmp_path / "passages"
    folder.mkdir()
    for number in range(PASSAGES):
        (folder / f"p{number:03d}.txt").write_text(
            f"Passage {number}. Ada Lovelace wrote to Charles Babbage from London in {1830 + number % 20}."
        )
    job_id = started_job(folder, scope)
    wait_for("the job to write", lambda: writing(job_id), 240, 0.05)

    services("down", "neo4j")
    close_driver()
    asked = time.monotonic()
    # Evidence only: the question must reach the graph (a question with generation would first be admitted
    # against the gpu queue's depth, which is not what this scenario is about).
    api = Client().post(
        "/api/ask", {"question": QUESTION, "collections": [scope], "generate": False}, content_type="application/json"
    )
    api_seconds = seconds_since(asked)
    asked = time.monotonic()
    page = Client().post("/ask/", {"question": QUESTION, "collection": scope, "evidence_only": "on"})
    page_seconds = seconds_since(asked)
    assert api.status_code == 503 and "Neo4j" in api.json()["error"] + json.dumps(api.json()), api.content
    html = page.content.decode()
    assert page.status_code == 503 and "Neo4j" in html and "Traceback" not in html
    assert api_seconds < 45 and page_seconds < 45, (api_seconds, page_seconds)  # the first loads the models

    stopped = time.monotonic()
    services("up", "neo4j")
    restarted = seconds_since(stopped)
    job = wait_for("the job to end", lambda: (s := job_state(job_id))["state"] in ("done", "failed") and s, 180, 1)
    ended = seconds_since(stopped)
    if job["state"] == "failed":
        assert job["error"], job  # a failed job says why

    # Never half-written: each document in the graph has its chunks, and the graph and the change log agree
    # on which documents exist and what they hold.
    in_graph = graph_documents(get_driver(), scope)
    assert all(chunks for chunks in in_graph.values()), "a document without its chunks"
    assert logged_documents(scope) == in_graph
    if job["state"] == "done":
        assert len(in_graph) == PASSAGES + 2
    record(
        f"Neo4j stopped mid-ingestion: /api/ask 503 in {api_seconds} s, search page 503 in {page_seconds} s; "
        f"Neo4j back in {restarted} s; job {job['state']} after {job['attempts']} attempt(s), {ended} s after the "
        f"stop; {len(in_graph)} documents, each with its chunks and its log entry"
    )
