"""Curation reviews in a real browser, as a curator (who is an auditor too): a merge suggestion
dismissed (gone from the suggestions, listed under "Dismissed") and restored; a relation reviewed
with its evidence sentence and the document it is in (opened in the viewer at that sentence), and
approved with a message that says what changed and links its change-log entry."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.support import DROPPED, KEPT, Browsing, Corpus, Persona

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def museum_pair(page: Page) -> Locator:
    """The suggestion row of the museum's two names, on the suggestions page (restored first if an
    earlier run on the same graph left the pair dismissed)."""
    page.goto("/curation/entities/suggestions/")
    dismissed = page.locator("ul.dismissed li", has_text=DROPPED).filter(has_text=KEPT)
    if dismissed.count():
        dismissed.first.get_by_role("button", name="Restore").click()
    rows = page.locator("table.suggestions tbody tr")
    return rows.filter(has=page.get_by_role("link", name=re.compile(rf"\b{DROPPED}$"))).filter(
        has=page.get_by_role("link", name=re.compile(rf"\b{KEPT}$"))
    )


def test_a_suggestion_is_dismissed_and_restored(browsing: Browsing, curator: Persona, corpus: Corpus) -> None:
    page = browsing.page
    browsing.login(curator)
    pair = museum_pair(page)
    expect(pair).to_have_count(1)
    pair.get_by_role("button", name="Dismiss").click()

    status = page.get_by_role("status")
    expect(status).to_contain_text("are no longer suggested as one")
    expect(pair).to_have_count(0)
    listed = page.locator("ul.dismissed li", has_text=DROPPED).filter(has_text=KEPT)
    expect(listed).to_have_count(1)
    expect(listed).to_contain_text(f"user:{curator.username}")
    expect(page).to_have_title(re.compile(r"^Merge suggestions"))
    browsing.shot("curation-suggestion-dismissed")

    listed.get_by_role("button", name="Restore").click()
    expect(status).to_contain_text("Restored: the pair is suggested again")
    expect(pair).to_have_count(1)
    expect(page.locator("ul.dismissed li", has_text=DROPPED).filter(has_text=KEPT)).to_have_count(0)


def test_a_relation_is_reviewed_with_its_evidence_and_approved(
    browsing: Browsing, curator: Persona, corpus: Corpus
) -> None:
    page = browsing.page
    browsing.login(curator)
    page.goto("/curation/relations/?entity=Bryological")
    rows = page.locator("#results table.relations tbody tr")
    with_sentence = rows.filter(has=page.locator("td.evidence q")).filter(
        has=page.locator("td.evidence a.open-document", has_text=corpus.collection)
    )
    expect(with_sentence.first).to_be_visible()
    row = with_sentence.first
    sentence = row.locator("td.evidence q").inner_text().strip()
    document = row.locator("td.evidence a.open-document").inner_text().strip()
    path = document.removeprefix(f"{corpus.collection}/")
    assert path in corpus.texts, document
    assert sentence and sentence in " ".join(corpus.texts[path].split()), (sentence, path)
    expect(row.locator("td.evidence")).to_contain_text(re.compile(r"\d+ supporting documents?"))
    predicate = row.locator("td").nth(1).inner_text().strip()
    source = row.locator("td").nth(0).get_by_role("link").inner_text().strip()
    browsing.shot("curation-relations")

    # The evidence opens the document viewer at that sentence.
    href = row.locator("td.evidence a.open-document").get_attribute("href")
    assert href
    page.goto(href)
    expect(page.locator("mark#cited")).to_be_in_viewport()
    expect(page.locator("mark#cited")).to_have_text(sentence)
    page.go_back()

    # Approving says what changed, with the change-log entry a curator-auditor may open.
    row = page.locator("#results table.relations tbody tr").filter(has_text=predicate).filter(has_text=source).first
    if row.get_by_role("button", name="approve").count():
        row.get_by_role("button", name="approve").click()
        status = page.get_by_role("status")
        expect(status).to_contain_text("Approved the relation.")
        entry = status.get_by_role("link", name=re.compile(r"^Change-log entry #\d+$"))
        expect(entry).to_have_count(1)
        row = page.locator("#results table.relations tbody tr").filter(has_text=predicate).filter(has_text=source)
        expect(row.first.locator("td").nth(4)).to_have_text("approved")
        entry.click()
        expect(page.locator("h1")).to_contain_text("relation.approved")
    else:  # approved by an earlier run on the same graph: the row says so and offers no second approval
        expect(row.locator("td").nth(4)).to_have_text("approved")
