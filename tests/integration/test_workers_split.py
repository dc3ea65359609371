"""Each kind of work on its own worker (ragkg/workers.py), on the real test stack: a question with
generation is answered while a long ingestion and a long exact attribution keep the ingest worker's
two processes busy; a maintenance task (an anchoring round) runs meanwhile on the maintenance
worker; the exact attribution, cancelled from the database as the audit page's Cancel does, stops
between two passes and is recorded cancelled."""

from __future__ import annotations

import json
import os
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

from tests.conftest import SERVICES, services
from tests.integration.test_answers import JOURNAL, QUESTION, SOCIETY
from tests.integration.test_faults import record
from tests.support import BASE_DIR, manage, wait_for

pytestmark = pytest.mark.integration

PASSAGES = 2400  # an ingestion of tens of seconds (at about 25 passages/s)
ABLATIONS = "400"  # an exact attribution of minutes, on the restarted ingest worker
# A ping answered by the maintenance worker, then an anchoring round sent to its queue as the beat sends it.
MAINTENANCE_PROBE = (
    "from apps.health.tasks import ping; from apps.ledger.tasks import anchor_task; "
    "pong = ping.apply_async(queue='maintenance').get(timeout=20)['pong']; anchor_task.delay(); print(pong)"
)
ANSWER_BOUND = 120  # seconds for the question asked while both run (alone: about 10-30 s here)


def real_db() -> sqlite3.Connection:
    return sqlite3.connect(Path(settings.STATE_DIR) / "db.sqlite3", timeout=10)


def one(sql: str, *params: Any) -> Any:
    with real_db() as db:
        row = db.execute(sql, params).fetchone()
    return None if row is None else row[0] if len(row) == 1 else row


def worker_up(name: str, **env: str) -> None:
    started = subprocess.run(
        [*SERVICES, "up", name], cwd=BASE_DIR, env={**os.environ, **env}, capture_output=True, text=True, timeout=300
    )
    assert started.returncode == 0, started.stdout + started.stderr


@pytest.fixture
def long_attribution_worker(live_services: None) -> Iterator[None]:
    """The ingest worker restarted with many ablations per exact attribution; restored after."""
    services("down", "celery-ingest")
    worker_up("celery-ingest", PROVENANCE_EXACT_ABLATIONS=ABLATIONS)
    try:
        yield
    finally:
        services("down", "celery-ingest")
        worker_up("celery-ingest")


def ask(scope: str) -> dict[str, Any]:
    asked = manage("ask", QUESTION, "--collection", scope, "--json")
    assert asked.returncode == 0, asked.stdout + asked.stderr
    return dict(json.loads(asked.stdout))


def test_a_question_is_answered_while_ingestion_and_exact_attribution_run_and_maintenance_goes_on(
    long_attribution_worker: None, tmp_path: Path
) -> None:
    scope = f"split-{uuid.uuid4().hex[:10]}"
    small = tmp_path / "small"
    small.mkdir()
    for name, text in {"journal.txt": JOURNAL, "society.txt": SOCIETY}.items():
        (small / name).write_text(text)
    ingested = manage("ingest", str(small), "--collection", scope, "--wait", "--json")
    assert ingested.returncode == 0, ingested.stderr
    first = ask(scope)
    assert first["state"] == "done", first

    # Both ingest worker processes taken: a long exact attribution and a long ingestion.
    attribution = subprocess.Popen(
        [sys.executable, "manage.py", "attribute", first["answer_id"], "--exact"],
        cwd=BASE_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    big = tmp_path / "passages"
    big.mkdir()
    for number in range(PASSAGES):
        (big / f"p{number:03d}.txt").write_text(
            f"Passage {number}. Ada Lovelace wrote to Charles Babbage from London in {1830 + number % 20}."
        )
    started = manage("ingest", str(big), "--collection", f"{scope}-big", "--json")
    assert started.returncode == 0, started.stderr
    job_id = str(json.loads(started.stdout)["id"]).replace("-", "")
    try:
        wait_for(
            "the exact attribution to run",
            lambda: one("SELECT done FROM provenance_exactrun WHERE answer_id = ? AND state = 'running'",
                        first["answer_id"].replace("-", "")),
            180,
        )  # fmt: skip
        wait_for("the ingestion to run", lambda: one("SELECT state FROM ingest_ingestjob WHERE id = ?", job_id)
                 == "running", 120)  # fmt: skip

        # The maintenance worker serves its queue meanwhile: a ping, and an anchoring round.
        anchors = one("SELECT COUNT(*) FROM ledger_anchor")
        # from a process of its own: this one's Celery result store may still follow a Redis an earlier test
        # pointed it at
        probe = manage("shell", "-c", MAINTENANCE_PROBE)
        assert probe.returncode == 0 and probe.stdout.strip().endswith("True"), probe.stdout + probe.stderr
        wait_for("an anchoring round", lambda: one("SELECT COUNT(*) FROM ledger_anchor") > anchors, 30)

        asked = time.monotonic()
        second = ask(scope)
        seconds = round(time.monotonic() - asked, 1)
        assert second["state"] == "done" and second["answer"].strip(), second
        assert seconds < ANSWER_BOUND, f"the question took {seconds} s"
        busy = one("SELECT state FROM provenance_exactrun WHERE answer_id = ?", first["answer_id"].replace("-", ""))
        assert busy == "running", "the attribution ended before the question: nothing was shown"

        # Cancel (what exact_cancel writes): the worker stops between two passes.
        with real_db() as db:
            db.execute(
                "UPDATE provenance_exactrun SET cancel_requested = 1 WHERE answer_id = ? AND state = 'running'",
                [first["answer_id"].replace("-", "")],
            )
        out, err = attribution.communicate(timeout=60)
        assert attribution.returncode == 1 and "exact attribution cancelled" in err, out + err
        state, done, total = one(
            "SELECT state, done, total FROM provenance_exactrun WHERE answer_id = ?",
            first["answer_id"].replace("-", ""),
        )
        assert state == "cancelled" and 0 < done < total == int(ABLATIONS)
        record(
            f"workers split: question answered in {seconds} s beside an ingestion and an exact attribution; "
            f"attribution cancelled after {done}/{total} passes"
        )
        assert not one(
            "SELECT COUNT(*) FROM provenance_attributionrecord WHERE answer_id = ? AND mode = 'exact'",
            first["answer_id"].replace("-", ""),
        )
    finally:
        if attribution.poll() is None:
            attribution.kill()
        deadline = time.monotonic() + 300  # the next tests find the ingest worker idle
        while one("SELECT state FROM ingest_ingestjob WHERE id = ?", job_id) in ("queued", "running"):
            if time.monotonic() > deadline:
                break
            time.sleep(1)
