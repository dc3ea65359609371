"""Job bookkeeping: claiming is idempotent and a dead worker never leaves a job stuck."""

import pytest
from pytest_django.fixtures import Settings

from apps.ingest.jobs import job_claim, job_create, job_finish
from apps.ingest.models import IngestJob
from apps.ingest.services import FAILED, FileOutcome

pytestmark = pytest.mark.django_db


def new_job() -> IngestJob:
    return job_create(collection="c", uploads=[("a.txt", b"Alan Turing")], enqueue=False)


def test_a_queued_job_is_claimed_once(settings: Settings) -> None:
    job = new_job()
    assert job_claim(job_id=str(job.id))
    job.refresh_from_db()
    assert (job.state, job.attempts) == (IngestJob.RUNNING, 1)


def test_redelivery_after_a_worker_died_retries_then_gives_up(settings: Settings) -> None:
    settings.INGEST_JOB_MAX_ATTEMPTS = 2
    job = new_job()
    assert job_claim(job_id=str(job.id))  # first worker, killed mid-run: the job stays "running"
    assert job_claim(job_id=str(job.id))  # the message is redelivered: second attempt
    assert not job_claim(job_id=str(job.id))  # third delivery: no attempts left
    job.refresh_from_db()
    assert job.state == IngestJob.FAILED
    assert "gave up after 2 attempts" in job.error


def test_a_finished_job_is_not_run_again() -> None:
    job = new_job()
    job_claim(job_id=str(job.id))
    job_finish(job_id=str(job.id), outcomes=[FileOutcome("a.txt", "created", "d1", {"chunks": 1})])
    assert not job_claim(job_id=str(job.id))
    job.refresh_from_db()
    assert (job.state, job.counts) == (IngestJob.DONE, {"created": 1, "chunks": 1})


def test_failed_files_fail_the_job_with_their_reasons() -> None:
    job = new_job()
    job_claim(job_id=str(job.id))
    outcomes = [
        FileOutcome("a.txt", "created", "d1", {"chunks": 2}),
        FileOutcome("b.exe", FAILED, error_code="unsupported_type", error=".exe is not supported"),
    ]
    finished = job_finish(job_id=str(job.id), outcomes=outcomes)
    assert finished.state == IngestJob.FAILED
    assert finished.error == "b.exe: .exe is not supported"
    assert [result["status"] for result in finished.results] == ["created", "failed"]
