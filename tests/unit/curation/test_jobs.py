"""Curation → Documents upload and Curation → Jobs: who may use them, what a refused upload says,
the live progress (htmx partial, refresh link without JavaScript), per-file errors and retry."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from pytest_django.fixtures import DjangoCaptureOnCommitCallbacks
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.accounts.models import Collection
from apps.ingest.jobs import failed_uploads_expire, job_claim, job_create, job_finish
from apps.ingest.models import IngestJob
from apps.ingest.services import FileOutcome

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"


@pytest.fixture(autouse=True)
def upload_dir(settings: SettingsWrapper, tmp_path: Path) -> Path:
    settings.UPLOAD_DIR = tmp_path
    return tmp_path


def failed_job(collection: str = "lab", bad: str = "bad.pdf") -> IngestJob:
    job = job_create(collection=collection, uploads=[("good.txt", b"Ada"), (bad, b"%PDF-x")], enqueue=False)
    job_claim(job_id=str(job.id))
    return job_finish(
        job_id=str(job.id),
        outcomes=[
            FileOutcome("good.txt", "created", "d1", {"chunks": 1}),
            FileOutcome(bad, "failed", error_code="corrupt_file", error="the PDF cannot be read"),
        ],
    )


@pytest.fixture
def lab(curator_user: User) -> None:
    Collection.objects.create(name="lab", owner=curator_user)
    Collection.objects.create(name="secret", owner=User.objects.create_user("sam"))


@pytest.mark.parametrize("url", ["/curation/jobs/", "/curation/documents/upload/"])
def test_users_without_the_curator_role_get_403(outsider: Client, url: str) -> None:
    response = outsider.post(url) if "upload" in url else outsider.get(url)
    assert response.status_code == 403


def test_the_documents_page_has_the_upload_form(curator: Client) -> None:
    content = curator.get("/curation/documents/").content.decode()
    assert 'enctype="multipart/form-data"' in content and 'name="files"' in content and "multiple" in content
    assert 'name="collection"' in content and "csrfmiddlewaretoken" in content


def test_an_upload_creates_a_job_in_a_new_collection_and_shows_its_progress(
    curator: Client, curator_user: User
) -> None:
    response = curator.post(
        "/curation/documents/upload/", {"files": [SimpleUploadedFile("notes.txt", b"Ada")], "collection": "mine"}
    )
    job = IngestJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/curation/jobs/{job.id}/"
    assert (job.collection, job.actor) == ("mine", "user:cora")
    assert Collection.objects.get(name="mine").owner == curator_user
    page = curator.get(response["Location"]).content.decode()
    assert 'id="progress"' in page and 'hx-trigger="every 1s"' in page
    assert f'href="/curation/jobs/{job.id}/" class="refresh"' in page  # without JavaScript
    assert "Uploaded 1 file into “mine”." in page


def test_a_refused_upload_is_a_400_with_the_reason_and_stores_nothing(curator: Client) -> None:
    response = curator.post(
        "/curation/documents/upload/",
        {"files": [SimpleUploadedFile("ok.txt", b"Ada"), SimpleUploadedFile("x.exe", b"MZ")], "collection": "mine"},
    )
    content = response.content.decode()
    assert response.status_code == 400
    assert "x.exe: “.exe” files are not accepted" in content
    assert 'value="mine"' in content
    assert not IngestJob.objects.exists() and not Collection.objects.filter(name="mine").exists()


def test_an_upload_into_an_unreadable_collection_is_refused(curator: Client, lab: None) -> None:
    response = curator.post(
        "/curation/documents/upload/", {"files": [SimpleUploadedFile("a.txt", b"Ada")], "collection": "secret"}
    )
    assert response.status_code == 400
    assert "The collection name “secret” is not available to you" in response.content.decode()


def test_an_upload_without_files_is_a_400(curator: Client) -> None:
    response = curator.post("/curation/documents/upload/", {"collection": "mine"})
    assert response.status_code == 400
    assert "Choose at least one file." in response.content.decode()


def test_the_jobs_list_shows_readable_jobs_with_errors_and_retry(curator: Client, lab: None) -> None:
    mine = failed_job("lab", bad=f"{SCRIPT}.pdf")
    hidden = failed_job("secret")
    content = curator.get("/curation/jobs/").content.decode()
    assert str(mine.id)[:8] in content and str(hidden.id)[:8] not in content
    assert "the PDF cannot be read" in content and "corrupt_file" in content
    assert SCRIPT not in content and "&lt;script&gt;" in content
    assert f'action="/curation/jobs/{mine.id}/retry/"' in content and "Retry 1 file" in content
    assert 'hx-trigger="every 2s"' not in content  # nothing runs: no polling


def test_the_jobs_list_polls_while_a_job_runs(curator: Client, lab: None) -> None:
    job_create(collection="lab", uploads=[("a.txt", b"Ada")], enqueue=False)
    full = curator.get("/curation/jobs/").content.decode()
    assert 'hx-trigger="every 2s"' in full and "refresh" in full
    partial = curator.get("/curation/jobs/", headers={"hx-request": "true"}).content.decode()
    assert "<html" not in partial and 'id="jobs"' in partial


def test_the_job_partial_stops_polling_when_the_job_ends(curator: Client, lab: None) -> None:
    job = job_create(collection="lab", uploads=[("a.txt", b"Ada")], enqueue=False)
    url = f"/curation/jobs/{job.id}/"
    running = curator.get(url, headers={"hx-request": "true"}).content.decode()
    assert "<html" not in running and running.count('hx-trigger="every 1s"') == 1  # the outer part polls
    job_claim(job_id=str(job.id))
    job_finish(job_id=str(job.id), outcomes=[FileOutcome("a.txt", "created", "d1", {"chunks": 1})])
    done = curator.get(url, headers={"hx-request": "true"}).content.decode()
    assert "hx-trigger" not in done and "Done:" in done


def test_the_job_page_says_how_long_failed_files_are_kept_and_when_they_expired(
    curator: Client,
    lab: None,
    settings: SettingsWrapper,
    django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks,
) -> None:
    settings.INGEST_KEEP_FAILED_DAYS = 30
    job = failed_job("lab")
    assert "for 30 days after its job" in curator.get("/curation/jobs/").content.decode()
    assert job.finished_at is not None
    until = (job.finished_at + timedelta(days=30)).strftime("%Y-%m-%d %H:%M")
    kept = curator.get(f"/curation/jobs/{job.id}/").content.decode()
    assert f"until {until}" in kept and "Retry the chosen files" in kept
    IngestJob.objects.filter(id=job.id).update(finished_at=timezone.now() - timedelta(days=31))
    with django_capture_on_commit_callbacks(execute=True):
        assert failed_uploads_expire() == 1
    expired = curator.get(f"/curation/jobs/{job.id}/").content.decode()
    assert "Retry the chosen files" not in expired
    assert "No failed file of this job is left to retry (1 kept file not retried in time, deleted)" in expired
    assert curator.post(f"/curation/jobs/{job.id}/retry/", follow=True).content.decode().count("no failed files left")


def test_a_job_of_an_unreadable_collection_is_404(curator: Client, lab: None) -> None:
    job = failed_job("secret")
    assert curator.get(f"/curation/jobs/{job.id}/").status_code == 404
    assert curator.post(f"/curation/jobs/{job.id}/retry/").status_code == 404
    assert IngestJob.objects.count() == 1


def test_retry_creates_a_new_job_with_the_failed_files(curator: Client, lab: None) -> None:
    job = failed_job("lab")
    page = curator.get(f"/curation/jobs/{job.id}/").content.decode()
    assert 'name="files" value="1" checked' in page and "bad.pdf" in page
    response = curator.post(f"/curation/jobs/{job.id}/retry/", {"files": ["1"]})
    retry = IngestJob.objects.exclude(id=job.id).get()
    assert response.status_code == 302 and response["Location"] == f"/curation/jobs/{retry.id}/"
    assert ([f["name"] for f in retry.files], retry.retry_of_id, retry.actor) == (["bad.pdf"], job.id, "user:cora")
    shown = curator.get(response["Location"]).content.decode()
    assert "Retrying 1 file as" in shown and f'retries <a href="/curation/jobs/{job.id}/"' in shown
    again = curator.post(f"/curation/jobs/{job.id}/retry/", follow=True).content.decode()
    assert "This job has no failed files left to retry." in again
    assert IngestJob.objects.count() == 2


def test_retry_without_a_choice_takes_every_kept_file(curator: Client, lab: None) -> None:
    job = failed_job("lab")
    curator.post(f"/curation/jobs/{job.id}/retry/")
    assert [f["name"] for f in IngestJob.objects.exclude(id=job.id).get().files] == ["bad.pdf"]


def test_retry_with_a_bad_choice_is_an_error_message(curator: Client, lab: None) -> None:
    job = failed_job("lab")
    content = curator.post(f"/curation/jobs/{job.id}/retry/", {"files": ["x"]}, follow=True).content.decode()
    assert "Choose files by their number." in content
    assert IngestJob.objects.count() == 1


def test_retry_needs_csrf(curator_user: User, lab: None) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(curator_user)
    job = failed_job("lab")
    assert client.post(f"/curation/jobs/{job.id}/retry/").status_code == 403
    assert client.post("/curation/documents/upload/", {"collection": "x"}).status_code == 403
