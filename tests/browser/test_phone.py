"""Every page at a phone's width (390 CSS pixels) in a real browser: nothing makes the page scroll
sideways (wide tables and long hashes scroll inside their own box or wrap). The pages are opened as
the admin (who sees them all) on the corpus: the search page with an answer, the graph explorer, the
document viewer, the audit, change-log, curation, job and key pages, and the login page."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page, ViewportSize, expect

from tests.browser.support import Browsing, Corpus, Persona
from tests.browser.test_search import evidence_for

pytestmark = [pytest.mark.integration, pytest.mark.browser]

PHONE: ViewportSize = {"width": 390, "height": 844}

# The elements reaching past the right edge, widest first (for the failure message).
OVERFLOWING = """(width) => {
  const out = [];
  for (const el of document.querySelectorAll("body *")) {
    const box = el.getBoundingClientRect();
    if (box.right > width + 1 && box.width > 0) {
      const classes = typeof el.className === "string" ? el.className.trim().split(/\\s+/).join(".") : "";
      out.push(`${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}.${classes} right=${Math.round(box.right)}`);
    }
  }
  return out.slice(0, 8);
}"""


def sideways(page: Page) -> tuple[int, list[str]]:
    """How wide the page scrolls, and what sticks out."""
    width = int(page.evaluate("() => document.documentElement.scrollWidth"))
    return width, ([] if width <= PHONE["width"] else list(page.evaluate(OVERFLOWING, PHONE["width"])))


def first_link(page: Page, selector: str) -> str:
    href = page.locator(selector).first.get_attribute("href")
    assert href, selector
    return urlparse(href).path + (f"?{urlparse(href).query}" if urlparse(href).query else "")


def test_no_page_scrolls_sideways_on_a_phone(browsing: Browsing, admin: Persona, corpus: Corpus) -> None:
    page = browsing.page
    page.set_viewport_size(PHONE)
    page.goto("/accounts/login/")
    pages: dict[str, str] = {"login": page.url}
    problems = [f"login: {sideways(page)}"] if sideways(page)[0] > PHONE["width"] else []
    browsing.login(admin)

    evidence_for(page, "Who founded the Bryological Society of Wales?", corpus)
    pages["search with an answer"] = "/"
    answer_page = first_link(page, "section.answer a[href^='/ask/']")
    viewer = first_link(page, "a.open-document")
    audit = first_link(page, "a[href^='/audit/answers/']")
    problems += [f"search with an answer: {sideways(page)}"] if sideways(page)[0] > PHONE["width"] else []

    page.goto("/graph/?q=Bryological")
    entity = first_link(page, ".graph-results li a")
    page.goto("/curation/entities/?q=Bryological")
    curated = first_link(page, "a[href^='/curation/entities/'][href$='/']:not([href='/curation/entities/'])")
    page.goto("/curation/jobs/")
    job = first_link(page, "a[href^='/curation/jobs/']:not([href='/curation/jobs/'])")
    page.goto("/audit/log/")
    entry = first_link(page, "a[href^='/audit/log/'][href$='/']:not([href='/audit/log/'])")
    paths = [
        "/history/",
        "/graph/",
        entity,
        answer_page,
        viewer,
        audit,
        "/audit/answers/",
        "/audit/log/",
        entry,
        "/audit/anchors/",
        "/status/",
        "/curation/",
        "/curation/entities/",
        curated,
        "/curation/entities/suggestions/",
        "/curation/relations/",
        "/curation/documents/",
        "/curation/jobs/",
        job,
        "/curation/feedback/",
        "/account/keys/",
    ]
    for path in paths:
        response = page.goto(path)
        assert response is not None and response.ok, (path, response and response.status)
        expect(page.locator("main")).to_be_visible()
        width, what = sideways(page)
        if width > PHONE["width"]:
            problems.append(f"{path}: {width}px wide: {what}")
    assert not problems, "pages scroll sideways at 390px:\n" + "\n".join(problems)
    page.goto("/")
    browsing.shot("phone-search")
