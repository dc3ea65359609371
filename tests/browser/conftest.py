"""Fixtures of the browser tests: Debian's Chromium, driven by Playwright, against the test web server.

The web server (gunicorn on WEB_PORT, 18000 in tests) and the Celery worker use the real test
database under var/test, not pytest-django's throwaway one, so everything the server must see
(users, documents) is made through ``manage.py`` in a subprocess, never through the ORM here.

The browser, the server, the users and the corpus live for the ``tests/browser`` package: the
Playwright sync API marks its event loop as running between calls, which Django's ORM refuses
(SynchronousOnlyOperation), so the browser must be gone before the rest of the suite runs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import Browser, ViewportSize, sync_playwright

from tests.browser.support import (
    CLOTH_COLOUR,
    CLOTH_NAME,
    JOURNAL,
    MUSEUM,
    PHOTO_NAME,
    PRINTER,
    SOCIETY,
    SURVEY_NAME,
    SURVEY_PAGES,
    TABLE,
    TABLE_NAME,
    Browsing,
    Corpus,
    Persona,
    field_notes,
    photo,
)
from tests.conftest import services, web_server_running
from tests.support import manage, manage_within, text_pdf

CHROMIUM = Path("/usr/bin/chromium")  # Debian's package (`make test` installs it: the Makefile's chromium target)
PASSWORD = "browser-test-password-1912"
ADMIN = Persona("browser-admin", PASSWORD)
AUDITOR = Persona("browser-auditor", PASSWORD)
CURATOR = Persona("browser-curator", PASSWORD)
UPLOADER = Persona("browser-uploader", PASSWORD)
OUTSIDER = Persona("browser-outsider", PASSWORD)
VIEWPORT: ViewportSize = {"width": 1280, "height": 900}
TIMEOUT_MS = 15_000  # any one action or expectation; asking waits longer (see the tests)

# Idempotent (the test database persists under var/test between runs); one subprocess, as each
# `manage.py` start costs seconds.
PEOPLE_SCRIPT = """
import json, os
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from apps.accounts.services import collection_grant
for row in json.loads(os.environ["BROWSER_PEOPLE"]):
    user, _ = get_user_model().objects.get_or_create(username=row["username"])
    user.is_superuser = row["superuser"]
    user.is_staff = row["superuser"] or row["staff"]
    user.is_active = True
    user.set_password(row["password"])
    user.save()
    user.groups.set([Group.objects.get_or_create(name=name)[0] for name in row["roles"]])
    for collection in row["reads"]:
        collection_grant(collection=collection, username=user.username)
"""


# Browser tests read answers as users do, so their stack generates with the product's default generator
# and answer check, not the suite's small one: a gpu worker of their own, and a web server counting with
# its tokenizer.
PRODUCT_GENERATOR: dict[str, str | None] = {
    "RAGKG_GENERATOR": settings.DEFAULT_GENERATOR,
    "ANSWER_MIN_ANSWER_SUPPORT": None,
}


# Preparing the default generator on a machine that never ran it (joining its chunk packages, checking
# the sha256, converting the GGUF into a dense copy) takes minutes: 1.5-3 on a quiet 2-core machine,
# more while anything else runs. The browser tests' time limit covers it (the first one sets the stack up).
PREPARE_TIMEOUT_S = 900


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.timeout(PREPARE_TIMEOUT_S + 300))


@pytest.fixture(scope="package")
def product_generator(live_services: None) -> Iterator[None]:
    """The gpu worker restarted with the default generator (prepared first: joined, checked and converted
    once per model cache), and restarted with the suite's own afterwards."""
    prepared = manage_within(
        PREPARE_TIMEOUT_S, "models", "--role", "generator", "--load", RAGKG_GENERATOR=settings.DEFAULT_GENERATOR
    )
    assert prepared.returncode == 0, prepared.stdout + prepared.stderr
    services("down", "celery-gpu")
    started = services("up", "celery-gpu", check=False, env=PRODUCT_GENERATOR)
    if started.returncode != 0:
        pytest.fail(
            f"could not start the gpu worker with {settings.DEFAULT_GENERATOR}:\n{started.stdout}{started.stderr}"
        )
    yield
    services("down", "celery-gpu")
    services("up", "celery-gpu", check=False)


@pytest.fixture(scope="package")
def web_server(product_generator: None) -> Iterator[str]:
    """The test web server's base URL (see tests.conftest.web_server_running)."""
    with web_server_running(env=PRODUCT_GENERATOR) as url:
        yield url


@pytest.fixture(scope="package")
def corpus(live_services: None, tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """Small documents, ingested by the real worker into a private collection no earlier run used:
    the journal and its society (asked about), where the journal is printed (a chain of names for the graph
    explorer), the museum's two names (merged by the curator), field notes with a word new in this
    run (which the outsider must never see), a table, two pictures and a PDF (the document viewer, image
    search)."""
    folder = tmp_path_factory.mktemp("moss")
    code = f"zq{uuid.uuid4().hex[:10]}"
    texts = {
        "journal.txt": JOURNAL,
        "society.txt": SOCIETY,
        "printer.txt": PRINTER,
        "museum.txt": MUSEUM,
        f"notes-{code}.txt": field_notes(code),
    }
    for name, text in texts.items():
        (folder / name).write_text(text)
    others = {
        TABLE_NAME: TABLE.encode(),
        PHOTO_NAME: photo(),
        CLOTH_NAME: photo(CLOTH_COLOUR),
        SURVEY_NAME: text_pdf(SURVEY_PAGES),
    }
    for name, data in others.items():
        (folder / name).write_bytes(data)
    collection = f"moss-{uuid.uuid4().hex[:8]}"
    files = [str(folder / name) for name in [*texts, *others]]
    run = manage("ingest", *files, "--collection", collection, "--wait", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    job = json.loads(run.stdout)
    expected = sorted([*texts, *others])
    assert sorted((r["path"], r["status"]) for r in job["results"]) == [(name, "created") for name in expected]
    return Corpus(collection=collection, texts=texts, job=job["id"], code=code)


@pytest.fixture(scope="package")
def people(corpus: Corpus) -> None:
    """In the server's database, with known passwords: a superuser (who reads every collection);
    an auditor, and a curator who is an auditor too, both granted to read the corpus's collection;
    a curator with no grant, who uploads; and an outsider, a viewer with no grant."""

    def row(
        persona: Persona,
        *,
        superuser: bool = False,
        staff: bool = False,
        roles: tuple[str, ...] = (),
        reads: tuple[str, ...] = (),
    ) -> dict[str, object]:
        return {
            "username": persona.username,
            "password": persona.password,
            "superuser": superuser,
            "staff": staff,
            "roles": list(roles),
            "reads": list(reads),
        }

    rows = [
        row(ADMIN, superuser=True),
        row(AUDITOR, roles=("auditor",), reads=(corpus.collection,)),
        row(CURATOR, roles=("curator", "auditor"), reads=(corpus.collection,)),
        row(UPLOADER, roles=("curator",)),
        row(OUTSIDER, roles=("viewer",)),
    ]
    result = manage("shell", "-c", PEOPLE_SCRIPT, BROWSER_PEOPLE=json.dumps(rows))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture
def admin(people: None) -> Persona:
    return ADMIN


@pytest.fixture
def auditor(people: None) -> Persona:
    return AUDITOR


@pytest.fixture
def curator(people: None) -> Persona:
    return CURATOR


@pytest.fixture
def uploader(people: None) -> Persona:
    return UPLOADER


@pytest.fixture
def outsider(people: None) -> Persona:
    return OUTSIDER


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `make chromium` (run by `make test`) installs Debian's chromium")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield chromium
        chromium.close()


CALL_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Remember whether the test itself failed, so that ``browsing`` can take a screenshot."""
    report = yield
    if call.when == "call":
        item.stash[CALL_FAILED] = report.failed
    return report


@pytest.fixture
def browsing(web_server: str, browser: Browser, request: pytest.FixtureRequest) -> Iterator[Browsing]:
    """A fresh browser context (no cookies) and page on the test server; fails the test at the end
    when a page logged a console error or threw an uncaught exception. A failed test leaves a
    screenshot of where it stopped in var/test/screenshots/failed-<test>.png. (The server comes up
    before the browser, so that the browser and its open connections are gone when it stops.)"""
    context = browser.new_context(base_url=web_server, viewport=VIEWPORT)
    context.set_default_timeout(TIMEOUT_MS)
    session = Browsing(page=context.new_page())
    context.on("console", session.console)
    context.on("weberror", session.web_error)
    yield session
    if request.node.stash.get(CALL_FAILED, False):
        session.shot(f"failed-{request.node.name}")
    context.close()
    if session.errors:
        pytest.fail("the pages logged errors:\n" + "\n".join(session.errors))
