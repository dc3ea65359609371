"""The upload form in a real browser, as a curator with no grant: upload a text file into a new
collection (which becomes theirs, and private), land on the job page and watch its progress section
until the job is done, with the file's outcome and counts in the results table; the new collection
is then one the picker offers."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.support import Browsing, Persona

pytestmark = [pytest.mark.integration, pytest.mark.browser]

INGEST_TIMEOUT_MS = 120_000  # the worker parses, extracts, embeds and writes the graph and the vectors
TEXT = "Ada Lovelace wrote notes on the engine of Charles Babbage in London."  # three entities for the extractor


def test_an_upload_becomes_a_job_whose_page_follows_it_until_done(
    browsing: Browsing, uploader: Persona, tmp_path: Path
) -> None:
    page = browsing.page
    document = tmp_path / "lovelace.txt"
    document.write_text(TEXT)
    collection = f"upload-{uuid.uuid4().hex[:8]}"
    browsing.login(uploader)
    page.get_by_role("navigation").first.get_by_role("link", name="Curation", exact=True).click()
    page.get_by_role("main").get_by_role("link", name="Documents", exact=True).first.click()
    expect(page.locator("h1")).to_have_text("Documents")
    page.get_by_label(re.compile(r"^Files")).set_input_files(document)
    page.get_by_role("region", name="Upload").get_by_label("Collection", exact=True).select_option(
        label="a new collection…"
    )
    page.get_by_label("New collection name").fill(collection)
    page.get_by_role("button", name="Upload and ingest").click()

    expect(page).to_have_url(re.compile(r"/curation/jobs/[0-9a-f-]{36}/$"))
    expect(page.locator("main")).to_contain_text(f"Collection {collection}")
    progress = page.locator("#progress")  # htmx swaps it every second until the job ends
    expect(progress.locator("strong").first).to_have_text("done", timeout=INGEST_TIMEOUT_MS)
    expect(progress.locator("progress")).to_have_attribute("value", "100")
    row = progress.locator("table tbody tr", has_text=document.name)
    expect(row).to_have_count(1)
    cells = row.locator("td")
    headers = progress.locator("table thead th").all_inner_texts()
    outcome = dict(zip(headers, cells.all_inner_texts(), strict=True))
    assert outcome["Outcome"] == "created", outcome
    assert int(outcome["Chunks"]) >= 1 and int(outcome["Entities"]) >= 2, outcome
    assert not outcome["Error"].strip(), outcome
    browsing.shot("upload-job")

    # The job is the uploader's own: it is listed on the upload page with its collection, done.
    page.get_by_role("link", name="all jobs").click()
    listed = page.locator("table.report tbody tr", has_text=collection)
    expect(listed).to_have_count(1)
    expect(listed).to_contain_text("done")

    # The new collection is the uploader's now: the picker offers it for the next upload.
    page.goto("/curation/documents/")
    assert (
        collection
        in page.get_by_role("region", name="Upload")
        .get_by_label("Collection", exact=True)
        .locator("option")
        .all_inner_texts()
    )
