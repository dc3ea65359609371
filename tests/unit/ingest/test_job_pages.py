"""The former staff upload pages: their addresses lead to Curation → Documents and Jobs, where
uploads and the live job pages are (tests/unit/curation/test_jobs.py)."""

import pytest
from django.test import Client

from apps.ingest.jobs import job_create

pytestmark = pytest.mark.django_db


def test_the_upload_page_redirects_to_curation_documents(client: Client, admin_client: Client) -> None:
    for who in (client, admin_client):
        response = who.get("/ingest/")
        assert (response.status_code, response["Location"]) == (302, "/curation/documents/")


def test_a_job_page_redirects_to_its_curation_page(admin_client: Client) -> None:
    job = job_create(collection="c", uploads=[("a.txt", b"Ada Lovelace")], enqueue=False)
    response = admin_client.get(f"/ingest/jobs/{job.id}/")
    assert (response.status_code, response["Location"]) == (302, f"/curation/jobs/{job.id}/")
    page = admin_client.get(response["Location"]).content.decode()
    assert "Collection <strong>c</strong>" in page and "queued" in page


def test_an_upload_posted_to_the_old_address_is_refused_not_dropped(admin_client: Client) -> None:
    response = admin_client.post("/ingest/", {"collection": "c"})
    assert response.status_code == 405 and response["Allow"] == "GET"
