"""`manage.py ingest` and `delete_document` end to end, through the real Celery worker."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.support import manage

pytestmark = pytest.mark.integration


def fresh_collection() -> str:
    """A collection no earlier run used: the worker's database and graph persist under var/test."""
    return f"cli-{uuid.uuid4().hex[:12]}"


def test_ingest_wait_json_then_unchanged_then_delete(live_services: None, tmp_path: Path) -> None:
    notes = tmp_path / "turing.md"
    notes.write_text("# Turing\n\nAlan Turing worked at Bletchley Park with Joan Clarke.\n")
    collection = fresh_collection()
    first = manage("ingest", str(notes), "--collection", collection, "--wait", "--json")
    assert first.returncode == 0, first.stderr
    job = json.loads(first.stdout)
    assert job["state"] == "done"
    [result] = job["results"]
    assert (result["path"], result["status"]) == ("turing.md", "created")
    assert result["counts"]["chunks"] == 1 and result["counts"]["entities"] >= 2

    again = json.loads(manage("ingest", str(notes), "--collection", collection, "--wait", "--json").stdout)
    assert [r["status"] for r in again["results"]] == ["unchanged"]

    deleted = manage("delete_document", result["document_id"])
    assert deleted.returncode == 0 and "deleted document" in deleted.stdout
    missing = manage("delete_document", result["document_id"])
    assert missing.returncode != 0 and "no document with id" in missing.stderr


def test_bad_input_gives_a_specific_error_and_a_non_zero_exit(live_services: None, tmp_path: Path) -> None:
    bad = tmp_path / "ragged.csv"
    bad.write_text("a,b\n1,2\n3\n")
    run = manage("ingest", str(bad), "--wait", "--json")
    assert run.returncode == 1
    job = json.loads(run.stdout)
    assert job["state"] == "failed"
    assert job["results"][0]["error_code"] == "ragged_table"
    assert "row 3" in job["results"][0]["error"]


def test_progress_bar_and_text_report(live_services: None, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Grace Hopper worked on COBOL.")
    run = manage("ingest", str(tmp_path), "--wait", "--collection", fresh_collection())
    assert run.returncode == 0, run.stderr
    assert "100%" in run.stderr
    assert "created" in run.stdout and f"{tmp_path.name}/a.txt" in run.stdout


def test_missing_path_is_a_clear_error(live_services: None) -> None:
    run = manage("ingest", "/no/such/file.txt")
    assert run.returncode != 0
    assert "no such file or directory: /no/such/file.txt" in run.stderr
