"""Curation → Documents upload against the real stack (web server, Celery worker, Neo4j): one good
and one bad file; the job fails for the bad one only, keeps it, and a retry queues it again as a
new job; the good file's ingestion is in the change log with the curator as actor.

The web server and the worker use the real test database under var/test, so the curator is made
through ``manage.py`` and the pages are used over HTTP, as a browser would."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator

import pytest
import requests

from tests.conftest import web_server_running
from tests.support import manage

pytestmark = pytest.mark.integration

PASSWORD = "curation-upload-password-1843"
GOOD = b"Ada Lovelace worked with Charles Babbage in London on the Analytical Engine."
BAD = b"%PDF-1.4\nthis is not really a PDF document\n"  # passes the upload check, fails parsing

CURATOR_SCRIPT = """
import os
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
user, _ = get_user_model().objects.get_or_create(username=os.environ["CURATOR_NAME"])
user.set_password(os.environ["CURATOR_PASSWORD"])
user.is_active = True
user.save()
user.groups.set([Group.objects.get_or_create(name="curator")[0]])
"""
ENTRIES_SCRIPT = """
import json, os
from apps.ledger.models import ChangeEntry
rows = ChangeEntry.objects.filter(subject_id__startswith=os.environ["COLLECTION"] + "/").order_by("seq")
print(json.dumps([[r.seq, r.actor, r.action, r.subject_id] for r in rows]))
"""


@pytest.fixture(scope="module")
def web(live_services: None) -> Iterator[str]:
    with web_server_running() as url:
        yield url


@pytest.fixture(scope="module")
def curator_name(live_services: None) -> str:
    name = f"cur-{uuid.uuid4().hex[:8]}"
    made = manage("shell", "-c", CURATOR_SCRIPT, CURATOR_NAME=name, CURATOR_PASSWORD=PASSWORD)
    assert made.returncode == 0, made.stdout + made.stderr
    return name


def csrf(session: requests.Session, url: str) -> str:
    page = session.get(url, timeout=30)
    assert page.status_code == 200, page.text[:500]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, "no CSRF token on " + url
    return token.group(1)


def logged_in(web: str, username: str) -> requests.Session:
    session = requests.Session()
    token = csrf(session, f"{web}/accounts/login/")
    response = session.post(
        f"{web}/accounts/login/",
        data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{web}/accounts/login/"},
        allow_redirects=False,
        timeout=30,
    )
    assert response.status_code == 302, response.text[:500]
    return session


def finished(session: requests.Session, url: str, timeout: float = 180) -> str:
    """The job page's live part once the job has ended (polled like htmx does)."""
    deadline = time.monotonic() + timeout
    while True:
        part = session.get(url, headers={"HX-Request": "true"}, timeout=30)
        assert part.status_code == 200 and "<html" not in part.text
        if "hx-trigger" not in part.text:
            return part.text
        assert time.monotonic() < deadline, f"the job did not end: {part.text[:800]}"
        time.sleep(0.5)


def test_upload_fail_retry_and_the_change_log(web: str, curator_name: str) -> None:
    session = logged_in(web, curator_name)
    collection = f"upload-{uuid.uuid4().hex[:8]}"
    token = csrf(session, f"{web}/curation/documents/")
    response = session.post(
        f"{web}/curation/documents/upload/",
        data={"collection": collection, "csrfmiddlewaretoken": token},
        files=[("files", ("good.txt", GOOD, "text/plain")), ("files", ("bad.pdf", BAD, "application/pdf"))],
        headers={"Referer": f"{web}/curation/documents/"},
        allow_redirects=False,
        timeout=60,
    )
    assert response.status_code == 302, response.text[:800]
    job_url = web + response.headers["Location"]
    page = session.get(job_url, timeout=30).text
    assert 'id="progress"' in page and collection in page

    part = finished(session, job_url)
    assert ">failed<" in part
    assert re.search(r"<td>good\.txt</td><td>created</td>", part), part
    assert re.search(r"<td>bad\.pdf</td><td>failed</td>", part), part
    assert 'name="files" value="1" checked' in part  # only the bad file is kept for a retry

    listing = session.get(f"{web}/curation/jobs/", timeout=30).text
    assert response.headers["Location"] in listing and "bad.pdf" in listing

    token = csrf(session, job_url)
    retried = session.post(
        f"{job_url}retry/",
        data={"files": "1", "csrfmiddlewaretoken": token},
        headers={"Referer": job_url},
        allow_redirects=False,
        timeout=30,
    )
    assert retried.status_code == 302, retried.text[:800]
    retry_url = web + retried.headers["Location"]
    assert retry_url != job_url
    assert "Retrying 1 file as" in session.get(retry_url, timeout=30).text
    retry_part = finished(session, retry_url)
    assert re.search(r"<td>bad\.pdf</td><td>failed</td>", retry_part), retry_part  # the same bytes fail again
    assert "good.txt" not in retry_part
    old = session.get(job_url, timeout=30).text
    assert "No failed file of this job is left to retry" in old

    shown = manage("shell", "-c", ENTRIES_SCRIPT, COLLECTION=collection)
    assert shown.returncode == 0, shown.stderr
    entries = json.loads(shown.stdout.strip().splitlines()[-1])
    assert [(actor, action, subject) for _, actor, action, subject in entries] == [
        (f"user:{curator_name}", "document.ingested", f"{collection}/good.txt")
    ]
