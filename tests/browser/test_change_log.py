"""The change-log audit pages in a real browser, as an auditor: the ingestion's entry in the log,
its canonical JSON, and "Verify now" against the test chain."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.browser.support import Browsing, Corpus, Persona

pytestmark = [pytest.mark.integration, pytest.mark.browser]

VERIFY_TIMEOUT_MS = 60_000  # recomputes every entry of the test database and reads the anchors on the chain


def test_the_ingestion_is_in_the_change_log_and_the_log_verifies(
    browsing: Browsing, auditor: Persona, corpus: Corpus
) -> None:
    page = browsing.page
    subject = f"{corpus.collection}/journal.txt"
    browsing.login(auditor)
    page.get_by_role("navigation").get_by_role("link", name="Change log").click()
    expect(page.locator("h1")).to_have_text("Knowledge change log")
    page.get_by_label("Subject contains").fill(corpus.collection)
    page.get_by_role("button", name="Filter").click()
    row = page.locator("table.report tbody tr", has_text=subject)
    expect(row).to_have_count(1)
    expect(row).to_contain_text("document.ingested")
    browsing.shot("change-log")

    row.get_by_role("link", name=re.compile(r"^#\d+$")).click()
    expect(page.locator("h1")).to_contain_text("document.ingested")
    canonical = json.loads(page.locator("#canonical").inner_text())
    assert canonical["action"] == "document.ingested"
    assert canonical["subject"] == {"kind": "Document", "id": subject}
    assert canonical["before"] is None and re.fullmatch(r"[0-9a-f]{64}", canonical["after"])
    browsing.shot("change-log-entry")

    page.goto("/audit/log/")
    page.get_by_role("button", name="Verify now").click(timeout=VERIFY_TIMEOUT_MS)  # the page answers when done
    verdict = page.locator("#verdict")
    expect(verdict).to_be_visible()
    browsing.shot("change-log-verify")
    if verdict.inner_text().startswith("OK"):
        return
    found = re.match(r"(\d+) problems?\. The first: \S", verdict.inner_text())
    assert found, f"neither OK nor a problem count: {verdict.inner_text()!r}"
    problems = page.locator("ul.problems li").all_inner_texts()
    assert len(problems) == int(found.group(1)) and all(p.strip() for p in problems), problems
