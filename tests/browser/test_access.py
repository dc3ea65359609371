"""Per-collection access in a real browser: for an outsider (a logged-in viewer with no grant on the
test collection) its documents appear nowhere, not in answers, not in sources, not on the pages of
other roles; and a curator without a grant cannot open its ingestion job or pick it for an upload."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import Browsing, Corpus, Persona

pytestmark = [pytest.mark.integration, pytest.mark.browser]

ANSWER_TIMEOUT_MS = 120_000  # retrieval in the web server, then generation and attribution on the worker
QUESTION = "Where did Eluned Morgan find the moss?"  # only the private field notes say
REFUSED = re.compile(r"(https?://[^/]+)?/(accounts|admin)/login/")


def ask(page: Page, *, collection: str = "") -> None:
    """Ask QUESTION on the search page and wait until it has answered (or said why not)."""
    page.goto("/ask/")
    page.get_by_label("Question").fill(QUESTION)
    if collection:  # a crafted form: the picker offers only what the reader may read
        page.get_by_label("Collection").evaluate(
            "(select, name) => { select.add(new Option(name, name)); select.value = name; }", collection
        )
    page.get_by_role("button", name="Ask").click(timeout=ANSWER_TIMEOUT_MS)
    # A finished answer (no stream pending: an answer, or "Not found in your documents") or an error.
    done = page.locator("section.answer:not([data-stream-url])").or_(page.locator("main [role=alert]"))
    done.first.wait_for(timeout=ANSWER_TIMEOUT_MS)
    page.wait_for_load_state("networkidle", timeout=ANSWER_TIMEOUT_MS)


def status_of(page: Page, path: str) -> tuple[int, str]:
    """The status of a GET of ``path`` with the page's cookies, and where a redirect points (fetched
    beside the page, so that a refusal is not logged as the page's console error)."""
    response = page.request.get(path, max_redirects=0)
    return response.status, response.headers.get("location", "")


def test_an_outsider_finds_nothing_of_a_private_collection(
    browsing: Browsing, outsider: Persona, corpus: Corpus
) -> None:
    page = browsing.page
    secrets = (corpus.code, corpus.collection)
    browsing.login(outsider)
    nav = page.get_by_role("navigation").first
    for name in ("Ingest", "Curation", "Audit", "Change log"):
        expect(nav.get_by_role("link", name=name, exact=True)).to_have_count(0)

    # Every collection the outsider reads: the field notes are not among them.
    ask(page)
    content = page.content()
    assert not [s for s in secrets if s in content], "the search page shows the private collection"
    assert corpus.notes not in content
    browsing.shot("outsider-search")

    # Naming the private collection is like naming one that does not exist: refused in the same words.
    for named in (corpus.collection, f"{corpus.collection}-missing"):
        ask(page, collection=named)
        expect(page.locator("main [role=alert]")).to_have_text(f"{named} is not a collection you may read.")
        assert corpus.code not in page.content()
    expect(page.locator("ol.sources li strong")).to_have_count(0)

    for path in (
        "/audit/log/",
        f"/audit/log/?subject={corpus.collection}",
        "/audit/answers/",
        "/curation/",
        f"/curation/entities/?q={corpus.code}",
        "/curation/documents/",
        "/curation/jobs/",
        f"/curation/jobs/{corpus.job}/",
    ):
        status, location = status_of(page, path)
        assert status in (403, 404) or (status == 302 and REFUSED.match(location)), (path, status, location)


def test_a_curator_without_a_grant_cannot_open_its_ingestion_job(
    browsing: Browsing, uploader: Persona, corpus: Corpus
) -> None:
    page = browsing.page
    browsing.login(uploader)
    assert status_of(page, f"/curation/jobs/{corpus.job}/") == (404, "")
    # The former staff address leads to the same page, which refuses the same way.
    assert status_of(page, f"/ingest/jobs/{corpus.job}/") == (302, f"/curation/jobs/{corpus.job}/")
    page.goto("/curation/jobs/")
    expect(page.locator("h1")).to_have_text("Ingestion jobs")
    expect(page.locator("main")).not_to_contain_text(corpus.collection)
    page.goto("/curation/documents/")
    picker = page.get_by_role("region", name="Upload").get_by_label("Collection", exact=True)
    expect(picker.locator("option").first).to_have_text("a new collection…")
    assert corpus.collection not in picker.locator("option").all_inner_texts()
