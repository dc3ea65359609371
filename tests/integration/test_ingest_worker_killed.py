"""A worker process killed in the middle of an ingestion: the job is retried and ends done, never stuck."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from tests.support import manage

pytestmark = pytest.mark.integration

PASSAGES = 1200  # long enough (tens of seconds at about 25 passages/s) to be caught running


def worker_pool_processes(name: str = "celery-ingest") -> list[int]:
    """The pool (child) processes of one test Celery worker (``celery-ingest``, ``celery-gpu``, ...)."""
    main = int((Path(settings.STATE_DIR) / "run" / f"{name}.pid").read_text().split()[0])
    children = Path(f"/proc/{main}/task/{main}/children").read_text().split()
    return [int(pid) for pid in children]


def job_state(job_id: str) -> dict[str, object]:
    shown = manage("ingest_jobs", job_id, "--json")
    assert shown.returncode in (0, 1), shown.stderr
    return dict(json.loads(shown.stdout))


def test_a_killed_worker_process_leaves_a_job_that_is_retried_to_done(live_services: None, tmp_path: Path) -> None:
    folder = tmp_path / "passages"
    folder.mkdir()
    for number in range(PASSAGES):
        (folder / f"p{number:03d}.txt").write_text(
            f"Passage {number}. Ada Lovelace wrote to Charles Babbage from London in {1830 + number % 20}. "
            f"Mary Somerville introduced them at a party in Marylebone, number {number}."
        )
    collection = f"killed-{uuid.uuid4().hex[:10]}"
    started = manage("ingest", str(folder), "--collection", collection, "--json")
    assert started.returncode == 0, started.stderr
    job_id = str(json.loads(started.stdout)["id"])

    deadline = time.monotonic() + 120
    state = job_state(job_id)
    while state["state"] != "running" or state["percent"] == 0:
        assert state["state"] in ("queued", "running"), f"the job ended before it could be killed: {state}"
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.2)
        state = job_state(job_id)
    for pid in worker_pool_processes():
        os.kill(pid, signal.SIGKILL)

    deadline = time.monotonic() + 240
    job = job_state(job_id)
    while job["state"] in ("queued", "running"):
        assert time.monotonic() < deadline, f"the job is stuck: {job}"
        time.sleep(1)
        job = job_state(job_id)
    assert job["state"] == "done", job
    assert job["attempts"] == 2
    results = job["results"]
    assert isinstance(results, list) and len(results) == PASSAGES
    assert {result["status"] for result in results} <= {"created", "unchanged"}
