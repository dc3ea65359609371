"""Retention of uploads after a job and the retry of its failed files."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from pytest_django.fixtures import DjangoCaptureOnCommitCallbacks
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.ingest import tasks
from apps.ingest.jobs import (
    RetryRefused,
    failed_uploads,
    failed_uploads_expire,
    job_claim,
    job_create,
    job_finish,
    job_retry,
    kept_until,
    retryable_files,
)
from apps.ingest.models import IngestJob
from apps.ingest.services import FileOutcome

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def upload_dir(settings: SettingsWrapper, tmp_path: Path) -> Path:
    settings.UPLOAD_DIR = tmp_path
    return tmp_path


def _finished(outcomes: list[FileOutcome], uploads: list[tuple[str, bytes]]) -> IngestJob:
    job = job_create(collection="c", uploads=uploads, enqueue=False, actor="user:cora")
    job_claim(job_id=str(job.id))
    return job_finish(job_id=str(job.id), outcomes=outcomes)


def _stored(job: IngestJob) -> list[bool]:
    return [Path(item["stored"]).exists() for item in job.files]


GOOD = FileOutcome("good.txt", "created", "d1", {"chunks": 1})
BAD = FileOutcome("bad.pdf", "failed", error_code="corrupt_file", error="the PDF cannot be read")


def test_a_job_keeps_only_the_files_that_failed(upload_dir: Path) -> None:
    job = _finished([GOOD, BAD], [("good.txt", b"Ada"), ("bad.pdf", b"%PDF-broken")])
    assert job.state == IngestJob.FAILED
    assert _stored(job) == [False, True]
    assert retryable_files(job) == [1]


def test_a_job_that_succeeds_keeps_nothing(upload_dir: Path) -> None:
    job = _finished([GOOD], [("good.txt", b"Ada")])
    assert job.state == IngestJob.DONE
    assert not (upload_dir / str(job.id)).exists()
    assert retryable_files(job) == []


def test_a_failed_document_inside_a_zip_keeps_the_zip() -> None:
    files = [{"name": "docs.zip", "stored": "x"}, {"name": "a.txt", "stored": "y"}]
    assert failed_uploads(files=files, failed_paths={"inner/page.html"}) == {0}
    assert failed_uploads(files=files, failed_paths={"a.txt"}) == {1}
    assert failed_uploads(files=files, failed_paths=set()) == set()


def test_retry_queues_the_failed_files_as_a_new_job(
    django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[object, ...]] = []
    monkeypatch.setattr(tasks.run_ingest_job, "apply_async", lambda args, queue: sent.append((*args, queue)))
    job = _finished([GOOD, BAD], [("good.txt", b"Ada"), ("bad.pdf", b"%PDF-broken")])
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        retry = job_retry(job_id=str(job.id), actor="user:cora")
    assert len(callbacks) == 2  # the task is sent, the old copy deleted, after commit
    assert sent == [(str(retry.id), "ingest")]
    assert (retry.collection, retry.actor, retry.retry_of_id, retry.state) == ("c", "user:cora", job.id, "queued")
    assert [item["name"] for item in retry.files] == ["bad.pdf"]
    assert Path(retry.files[0]["stored"]).read_bytes() == b"%PDF-broken"
    job.refresh_from_db()
    assert job.files[1]["retried_as"] == str(retry.id)
    assert _stored(job) == [False, False]
    assert not Path(job.files[1]["stored"]).parent.exists()  # the emptied folder goes too
    assert retryable_files(job) == []
    with pytest.raises(RetryRefused, match="no failed files left"):
        job_retry(job_id=str(job.id), actor="user:cora")


def test_retry_of_chosen_files_leaves_the_others_for_later() -> None:
    bad2 = FileOutcome("bad2.pdf", "failed", error_code="corrupt_file", error="no")
    job = _finished([BAD, bad2], [("bad.pdf", b"%PDF-1"), ("bad2.pdf", b"%PDF-2")])
    retry = job_retry(job_id=str(job.id), numbers=[1], actor="user:cora")
    assert [item["name"] for item in retry.files] == ["bad2.pdf"]
    job.refresh_from_db()
    assert retryable_files(job) == [0]


def test_a_job_that_did_not_fail_cannot_be_retried() -> None:
    job = job_create(collection="c", uploads=[("a.txt", b"Ada")], enqueue=False)
    with pytest.raises(RetryRefused):
        job_retry(job_id=str(job.id), actor="user:cora")
    assert IngestJob.objects.count() == 1


def test_a_crashed_job_keeps_every_file_for_a_retry() -> None:
    from apps.ingest.jobs import job_fail

    job = job_create(collection="c", uploads=[("a.txt", b"Ada"), ("b.txt", b"Bob")], enqueue=False)
    job_claim(job_id=str(job.id))
    job_fail(job_id=str(job.id), error="internal error")
    job.refresh_from_db()
    assert retryable_files(job) == [0, 1]


def _ended(job: IngestJob, days_ago: float) -> IngestJob:
    IngestJob.objects.filter(id=job.id).update(finished_at=timezone.now() - timedelta(days=days_ago))
    return IngestJob.objects.get(id=job.id)


def test_kept_files_not_retried_in_time_are_deleted_and_marked(
    settings: SettingsWrapper, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks
) -> None:
    settings.INGEST_KEEP_FAILED_DAYS = 30
    old = _ended(_finished([GOOD, BAD], [("good.txt", b"Ada"), ("bad.pdf", b"%PDF-old")]), 31)
    recent = _ended(_finished([BAD], [("bad.pdf", b"%PDF-recent")]), 29)
    retried = _ended(_finished([BAD], [("bad.pdf", b"%PDF-retried")]), 40)
    taken_over = [{**retried.files[0], "retried_as": "a later job"}]  # as job_retry marks it
    IngestJob.objects.filter(id=retried.id).update(files=taken_over)
    assert recent.finished_at is not None and kept_until(recent) == recent.finished_at + timedelta(days=30)
    with django_capture_on_commit_callbacks(execute=True):
        assert failed_uploads_expire() == 1
    old.refresh_from_db()
    assert _stored(old) == [False, False] and old.files[1]["expired"] == timezone.now().date().isoformat()
    assert not Path(old.files[1]["stored"]).parent.exists()
    assert retryable_files(old) == []
    assert _stored(_ended(recent, 29)) == [True] and retryable_files(recent) == [0]
    assert "expired" not in IngestJob.objects.get(id=retried.id).files[0]  # its retry took the file over
    assert _stored(retried) == [True]  # the later job's business, not the expiry's
    with django_capture_on_commit_callbacks(execute=True):
        assert failed_uploads_expire() == 0  # nothing left to expire


def test_zero_days_keeps_failed_files_until_they_are_retried(settings: SettingsWrapper) -> None:
    settings.INGEST_KEEP_FAILED_DAYS = 0
    job = _ended(_finished([BAD], [("bad.pdf", b"%PDF-1")]), 3650)
    assert failed_uploads_expire() == 0 and kept_until(job) is None
    assert _stored(job) == [True] and retryable_files(job) == [0]
