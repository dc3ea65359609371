"""The document viewer in a real browser against the running stack: from an answer's source to its
document opened at the cited sentence (marked and scrolled into view), a table at the cited row and
cell, a PDF at its page (the page's picture shown with its text), an image from the image search full
size; the outsider is refused the document like a missing one."""

from __future__ import annotations

import re
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import PHOTO_NAME, SURVEY_NAME, TABLE_NAME, Browsing, Corpus, Persona
from tests.browser.test_search import evidence_for, images_for

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def open_source(page: Page, document: str) -> None:
    """Follow the first source of ``document`` to the viewer."""
    source = page.locator(
        "ol.sources li", has=page.locator("a.open-document", has_text=re.compile(re.escape(document)))
    )
    expect(source.first).to_be_visible()
    source.first.locator("a.open-document").click()
    expect(page).to_have_url(re.compile(r"/documents/[^/]+/\?unit="))


def test_a_source_opens_its_document_at_the_cited_sentence(
    browsing: Browsing, auditor: Persona, corpus: Corpus
) -> None:
    page = browsing.page
    browsing.login(auditor)
    evidence_for(page, "Who founded the Bryological Society of Wales?", corpus)
    open_source(page, "society")
    cited = page.locator("mark#cited")
    expect(cited).to_be_in_viewport()
    assert any(cited.inner_text().strip() in text for text in corpus.texts.values())
    expect(page.locator("p.passage.cited")).to_have_count(1)
    expect(page.locator(".document-view h1")).to_be_visible()
    browsing.shot("document-viewer", readme="document-viewer.png")


def test_a_table_row_opens_at_its_cell(browsing: Browsing, auditor: Persona, corpus: Corpus) -> None:
    page = browsing.page
    browsing.login(auditor)
    evidence_for(page, "How many Polytrichum were counted at Borth?", corpus)
    open_source(page, TABLE_NAME.split(".")[0])
    row = page.locator("tr.cited")
    expect(row).to_be_in_viewport()
    expect(row).to_contain_text("Polytrichum")
    expect(row.locator("mark#cited")).to_have_count(1)
    expect(page.locator(".document-table h2")).to_contain_text("Table:")


def test_a_pdf_opens_at_its_page_with_the_page_picture(browsing: Browsing, auditor: Persona, corpus: Corpus) -> None:
    page = browsing.page
    browsing.login(auditor)
    evidence_for(page, "When were the mosses of Tregaron bog counted?", corpus)
    open_source(page, SURVEY_NAME.split(".")[0])
    expect(page.locator("mark#cited")).to_be_in_viewport()
    expect(page.locator("mark#cited")).to_contain_text("Tregaron")
    second = page.locator("#page-2")
    expect(second).to_have_text("Page 2")
    picture = page.locator("a.page-picture img").nth(1)
    picture.scroll_into_view_if_needed()
    page.wait_for_function("(img) => img.complete && img.naturalWidth > 0", arg=picture.element_handle())
    browsing.shot("document-viewer-pdf")


def test_an_image_opens_full_size_with_its_labels(browsing: Browsing, auditor: Persona, corpus: Corpus) -> None:
    page = browsing.page
    browsing.login(auditor)
    images_for(page, "a green picture of moss", corpus)
    link = page.locator(".image-results a.open-document", has_text=re.compile(re.escape(PHOTO_NAME.split(".")[0])))
    expect(link.first).to_be_attached()
    link.first.click()
    figure = page.locator("figure#cited")
    expect(figure).to_be_in_viewport()
    image = figure.locator("img")
    page.wait_for_function("(img) => img.complete && img.naturalWidth === 120", arg=image.element_handle())
    expect(figure.locator("figcaption")).to_contain_text("120")


def test_the_outsider_cannot_open_the_corpus_documents(
    browsing: Browsing, auditor: Persona, outsider: Persona, corpus: Corpus
) -> None:
    page = browsing.page
    browsing.login(auditor)
    evidence_for(page, "Who founded the Bryological Society of Wales?", corpus)
    href = page.locator("a.open-document").first.get_attribute("href")
    assert href
    path = urlparse(href).path
    assert page.request.get(path).status == 200
    page.context.clear_cookies()
    browsing.login(outsider)
    refused = page.request.get(path)  # beside the page: a refusal is no console error
    missing = page.request.get("/documents/" + "0" * 64 + "/")
    assert refused.status == missing.status == 404
    assert corpus.collection not in refused.text() and corpus.code not in refused.text()
