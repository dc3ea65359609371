"""The search page and an answer's audit page in a real browser: ask on "/", watch the answer stream
in and come back with its "[n]" citations and highlighted sources, follow it to the audit page and
see what supports a word; find it again in the history; and the question form used with the
keyboard alone."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import Browsing, Corpus, Persona

pytestmark = [pytest.mark.integration, pytest.mark.browser]

QUESTION = "Who was the first president of the society that publishes the Journal of Moss Studies?"
NAME = "Gwendolyn Pryce"
ANSWER_TIMEOUT_MS = 180_000  # retrieval, then generation (the default generator, on the CPU) and attribution

# Notes in window.__streamed whether a token was ever appended to a streaming answer (.answer-live).
WATCH_STREAM = """() => {
  window.__streamed = false;
  new MutationObserver((changes) => {
    if (changes.some((c) => c.target.closest && c.target.closest(".answer-live") && c.addedNodes.length)) {
      window.__streamed = true;
    }
  }).observe(document.body, { childList: true, subtree: true });
}"""
# The answer section is final (no stream pending) and is a new one, or the page shows an error.
ANSWERED = """(previous) => {
  if (document.querySelector("#results [role=alert]")) return true;
  const section = document.querySelector("section.answer");
  return !!section && !section.dataset.streamUrl && section.dataset.answerId !== previous;
}"""


def ask(page: Page, submit: Callable[[], None]) -> None:
    """Submit the question form with ``submit`` (htmx posts it to "/") and wait until the streamed
    answer is replaced by the finished one; fail with the page's error if it shows one."""
    previous = page.evaluate("() => document.querySelector('section.answer')?.dataset.answerId ?? null")
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/"), timeout=ANSWER_TIMEOUT_MS):
        submit()
    page.wait_for_function(ANSWERED, arg=previous, timeout=ANSWER_TIMEOUT_MS)
    alerts = page.locator("main [role=alert]").all_inner_texts()
    assert not alerts, f"the search page reported: {alerts}"


def evidence_for(page: Page, question: str, corpus: Corpus, *, generate: bool = False) -> None:
    """Ask in the corpus's collection from the search page: for evidence only, unless ``generate``."""
    page.goto("/")
    page.get_by_label("Question").fill(question)
    page.get_by_label("Collection").select_option(corpus.collection)
    if not generate:
        page.get_by_label("Evidence only").check()
    ask(page, lambda: page.get_by_role("button", name="Ask").click())


def images_for(page: Page, query: str, corpus: Corpus) -> None:
    """Search the corpus's collection for pictures, from the search page."""
    page.goto("/")
    page.get_by_label("Question").fill(query)
    page.get_by_label("Collection").select_option(corpus.collection)
    page.get_by_label("Images").check()
    page.get_by_role("button", name="Ask").click()


def test_an_answer_streams_cites_its_sources_and_its_audit_page_shows_what_supports_a_word(
    browsing: Browsing, admin: Persona, corpus: Corpus
) -> None:
    page = browsing.page
    browsing.login(admin)
    page.goto("/")
    page.evaluate(WATCH_STREAM)
    page.get_by_label("Question").fill(QUESTION)
    page.get_by_label("Collection").select_option(corpus.collection)
    button = page.get_by_role("button", name="Ask")
    ask(page, lambda: button.click(timeout=ANSWER_TIMEOUT_MS))
    assert page.evaluate("() => window.__streamed"), "no token was streamed into the answer"
    documents = page.locator("ol.sources li strong").all_inner_texts()
    # Asking again retrieves the same sources (and this web worker's models are warm now, so the
    # timings on the screenshot are the usual ones).
    ask(page, lambda: button.click(timeout=ANSWER_TIMEOUT_MS))
    assert page.locator("ol.sources li strong").all_inner_texts() == documents
    expect(page).to_have_url(re.compile(r"/$"))

    answer = page.locator(".answer-text")
    expect(answer).to_be_visible()
    assert answer.inner_text().strip()
    cites = answer.locator("a.cite")
    assert cites.count() >= 1, f"no [n] citation in {answer.inner_text()!r}"
    for link in cites.all():
        expect(link).to_have_text(re.compile(r"^\[\d+\]$"))
        expect(page.locator(f"ol.sources li{link.get_attribute('href')}")).to_be_visible()
    sources = page.locator("ol.sources")
    expect(sources).to_contain_text("society.txt")
    # The right answer, cited to the source that says it (the stack runs the product's generator).
    expect(answer).to_contain_text(NAME)
    society = sources.locator("li", has_text="society.txt").first.get_attribute("id")
    assert f"#{society}" in {link.get_attribute("href") for link in cites.all()}, answer.inner_text()
    expect(sources.locator("mark").first).to_be_visible()  # the supporting sentence
    expect(sources.locator("figure.graph-path ol.path-steps").first).to_be_visible()
    expect(page.locator(".latency-bar .stage-generation")).to_have_count(1)
    browsing.shot("search-answer", readme="search.png")
    cites.first.click()
    expect(page).to_have_url(re.compile(r"/#source-\d+$"))

    page.get_by_role("link", name="audit page").click()
    expect(page).to_have_url(re.compile(r"/audit/answers/[0-9a-f-]{36}/$"))
    expect(page.locator("blockquote.question")).to_have_text(QUESTION)
    expect(page.locator(".knowledge-log")).to_contain_text(re.compile(r"entry #\d+"))
    hover_a_supported_word(page, corpus)
    browsing.shot("audit-answer", readme="audit.png")

    page.get_by_role("link", name="History").click()
    page.get_by_role("link", name=QUESTION).first.click()
    expect(page).to_have_url(re.compile(r"/ask/[0-9a-f-]{36}/$"))
    expect(page.locator(".answer-text a.cite").first).to_be_visible()


def hover_a_supported_word(page: Page, corpus: Corpus) -> None:
    """Hover a word of the answer that a source supports (part of the name asked for, when the answer
    has it); the panel shows that word and, first, the supporting sentence cut from its source's text."""
    data = json.loads(page.locator("#audit-data").text_content() or "{}")
    shown = set(page.locator("#answer-text .tok").evaluate_all("spans => spans.map(s => Number(s.dataset.token))"))
    supported = [t for t in data["tokens"] if t["supports"] and t["text"].strip() and t["index"] in shown]
    assert supported, "no word of the answer has a supporting sentence"
    in_name = [t for t in supported if t["text"].strip() in NAME]
    token = max(in_name, key=lambda t: len(t["text"].strip())) if in_name else supported[0]
    word = page.locator(f'#answer-text .tok[data-token="{token["index"]}"]').first
    word.hover()
    expect(word).to_have_class(re.compile(r"\bactive\b"))
    panel = page.locator("#token-panel")
    expect(panel.locator("h3")).to_have_text(f"“{token['text'].strip()}”")
    support = token["supports"][0]
    source = next(s for s in data["sources"] if s["number"] == support["number"])
    sentence = source["text"][support["start"] : support["end"]]
    assert sentence.strip() and any(sentence.strip() in text for text in corpus.texts.values())
    expect(panel.locator("section.support blockquote.sentence").first).to_have_text(sentence.strip())
    expect(panel.locator("section.support mark").first).to_have_text(sentence.strip())


def test_the_question_form_works_from_the_keyboard(browsing: Browsing, admin: Persona, corpus: Corpus) -> None:
    page = browsing.page
    browsing.login(admin)
    page.goto("/")
    question = page.get_by_label("Question")
    expect(question).to_be_focused()  # autofocus
    page.keyboard.type("Who founded the Bryological Society of Wales?")
    page.keyboard.press("Tab")
    picker = page.get_by_label("Collection")
    expect(picker).to_be_focused()
    picker.select_option(corpus.collection)
    expect(picker).to_be_focused()
    page.keyboard.press("Tab")
    evidence_only = page.get_by_label("Evidence only")
    expect(evidence_only).to_be_focused()
    page.keyboard.press("Space")
    expect(evidence_only).to_be_checked()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    expect(question).to_be_focused()
    ask(page, lambda: page.keyboard.press("Enter"))
    expect(page.locator("section.answer")).to_contain_text("Evidence only: no answer was generated.")
    expect(page.locator("ol.sources")).to_contain_text("Bryological Society of Wales")
    expect(page.get_by_label("Question")).to_have_value("Who founded the Bryological Society of Wales?")
