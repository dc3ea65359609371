"""The upload form and the live job page (htmx polls until the job ends)."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from apps.ingest.jobs import job_claim, job_finish
from apps.ingest.models import IngestJob
from apps.ingest.services import FileOutcome

pytestmark = pytest.mark.django_db


def test_outsiders_are_sent_to_log_in(client: Client) -> None:
    response = client.get("/ingest/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_upload_creates_a_job_and_shows_it(admin_client: Client) -> None:
    upload = SimpleUploadedFile("notes.txt", b"Alan Turing worked at Bletchley Park.")
    response = admin_client.post("/ingest/", {"files": [upload], "collection": "research"})
    assert response.status_code == 302
    job = IngestJob.objects.get()
    assert (job.collection, job.state, [f["name"] for f in job.files]) == ("research", "queued", ["notes.txt"])
    page = admin_client.get(response["Location"])
    assert page.status_code == 200
    assert "research" in page.content.decode() and "queued" in page.content.decode()


def test_upload_without_files_is_a_clear_error(admin_client: Client) -> None:
    response = admin_client.post("/ingest/", {"collection": "research"})
    assert response.status_code == 400
    assert "Choose at least one file." in response.content.decode()
    assert not IngestJob.objects.exists()


def test_the_partial_polls_until_the_job_ends(admin_client: Client) -> None:
    from apps.ingest.jobs import job_create

    job = job_create(collection="c", uploads=[("a.txt", b"Ada Lovelace")], enqueue=False)
    url = f"/ingest/jobs/{job.id}/"
    running = admin_client.get(url, headers={"hx-request": "true"}).content.decode()
    assert "<html" not in running and 'hx-trigger="every 1s"' in running
    job_claim(job_id=str(job.id))
    job_finish(job_id=str(job.id), outcomes=[FileOutcome("a.txt", "created", "d1", {"chunks": 1, "entities": 1})])
    finished = admin_client.get(url, headers={"hx-request": "true"}).content.decode()
    assert "hx-trigger" not in finished
    assert "done" in finished and "a.txt" in finished
