"""An answer seen from its other sides, in a real browser against the running stack: "show in graph"
draws its paths in the explorer with the sources highlighted; a question the documents do not cover
gets the "not found in your documents" state, not an invented answer; the audit page names the
entities of its paths (never raw ids); and exact attribution, started from the audit page, shows its
progress, refreshes itself and can be cancelled."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.support import Browsing, Corpus, Persona
from tests.browser.test_search import evidence_for

pytestmark = [pytest.mark.integration, pytest.mark.browser]

READY = "#graph-explorer[data-ready=true]"
RAW_ENTITY_ID = re.compile(r"\bentity [0-9a-f]{8}\b")
EXACT_TIMEOUT_MS = 240_000  # the ingest worker takes the run between other work; each pass is a forward pass


def test_show_in_graph_draws_the_answers_paths_with_its_sources(
    browsing: Browsing, auditor: Persona, corpus: Corpus
) -> None:
    page = browsing.page
    browsing.login(auditor)
    evidence_for(page, "Who founded the Bryological Society of Wales?", corpus)
    page.locator("section.answer a.show-in-graph").click()
    expect(page).to_have_url(re.compile(r"/graph/\?answer=[0-9a-f-]{36}$"))
    page.wait_for_selector(READY)
    expect(page.locator("#graph-explorer h2")).to_have_text("Paths of an answer")
    sources = page.evaluate("() => window.ragkgExplorer.cy.nodes('.source').length")
    entities = page.evaluate("() => window.ragkgExplorer.cy.nodes(\"[label = 'Entity']\").length")
    assert sources >= 1 and entities >= 1, (sources, entities)
    listed = page.locator(".graph-list .graph-neighbours")
    expect(listed).to_contain_text("source [1]")
    expect(listed).to_contain_text("Bryological Society")
    browsing.shot("graph-answer")


def test_a_question_the_documents_do_not_cover_is_not_found(
    browsing: Browsing, auditor: Persona, corpus: Corpus
) -> None:
    page = browsing.page
    browsing.login(auditor)
    evidence_for(page, "What is the boiling point of mercury in kelvin?", corpus, generate=True)
    answer = page.locator("section.answer")
    expect(answer.locator(".answer-text")).to_have_text("Not found in your documents.")
    expect(answer.locator(".not-found")).to_contain_text("do not")
    expect(answer.locator(".answer-text a.cite")).to_have_count(0)
    browsing.shot("search-not-found")


def test_the_audit_page_names_entities_and_exact_attribution_can_be_followed_and_cancelled(
    browsing: Browsing, admin: Persona, corpus: Corpus
) -> None:
    page = browsing.page
    browsing.login(admin)
    evidence_for(page, "Who founded the Bryological Society of Wales?", corpus, generate=True)
    page.get_by_role("link", name="audit page").click()
    expect(page).to_have_url(re.compile(r"/audit/answers/[0-9a-f-]{36}/$"))

    paths = page.locator("ol.paths li")
    expect(paths.first).to_be_visible()
    text = " ".join(paths.all_inner_texts())
    assert not RAW_ENTITY_ID.search(text), text
    assert "Bryological Society" in text, text

    status = page.locator("#exact-status")
    status.get_by_role("button", name="Run exact attribution").click()
    expect(status).to_contain_text(re.compile(r"exact attribution: (queued|running)"))
    expect(status.get_by_role("button", name="Cancel")).to_be_visible()
    browsing.shot("audit-exact-running")
    # The status refreshes itself (htmx): once the worker has it, it counts its passes.
    expect(status).to_contain_text(re.compile(r"running \d+/\d+"), timeout=EXACT_TIMEOUT_MS)
    status.get_by_role("button", name="Cancel").click()
    expect(page.locator("#exact-status")).to_contain_text(
        re.compile(r"cancelling after the current pass|exact attribution: cancelled")
    )
    expect(page.locator("#exact-status")).to_contain_text("exact attribution: cancelled", timeout=EXACT_TIMEOUT_MS)
    expect(
        page.locator("#exact-status").get_by_role("button", name=re.compile("Run exact attribution"))
    ).to_be_visible()
