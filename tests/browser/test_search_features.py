"""The search page's helpers in a real browser against the running stack: the collection picker lists
what the reader may read (the outsider never sees the private corpus's collection), an example
question is asked with one click, a pasted question over the limit is refused with its length and
stays whole in the field, a thumbs down with a note is saved and listed for curators, and image search
shows the close images first with the rest behind "show more"."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.support import CLOTH_NAME, PHOTO_NAME, Browsing, Corpus, Persona
from tests.browser.test_search import ask, evidence_for, images_for

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def test_the_picker_offers_the_readers_collections(browsing: Browsing, auditor: Persona, corpus: Corpus) -> None:
    page = browsing.page
    browsing.login(auditor)
    page.goto("/")
    picker = page.get_by_label("Collection")
    expect(picker.locator("option").first).to_have_text("All you can read")
    assert corpus.collection in picker.locator("option").all_inner_texts()


def test_the_outsiders_picker_does_not_name_the_private_collection(
    browsing: Browsing, outsider: Persona, corpus: Corpus
) -> None:
    page = browsing.page
    browsing.login(outsider)
    page.goto("/")
    names = page.get_by_label("Collection").locator("option").all_inner_texts()
    assert names[0] == "All you can read" and corpus.collection not in names


def test_an_example_question_is_asked_with_one_click(browsing: Browsing, auditor: Persona, corpus: Corpus) -> None:
    page = browsing.page
    browsing.login(auditor)
    page.goto("/")
    page.get_by_label("Evidence only").check()
    example = page.locator("nav.examples a.example").first
    expect(example).to_be_visible()
    question = example.inner_text().strip()
    assert question.startswith(("Who is ", "What is ", "Where is ")), question
    ask(page, example.click)
    expect(page.locator("section.answer .asked")).to_have_text(question)
    expect(page.get_by_label("Question")).to_have_value(question)


def test_a_long_paste_is_refused_with_its_length_not_cut(browsing: Browsing, auditor: Persona, corpus: Corpus) -> None:
    page = browsing.page
    browsing.login(auditor)
    page.goto("/")
    pasted = ("Bryological " * 200).strip()  # 2,399 characters
    page.get_by_label("Question").fill(pasted)
    expect(page.get_by_label("Question")).to_have_value(pasted)
    page.get_by_role("button", name="Ask").click()
    expect(page.locator("#results [role=alert]")).to_contain_text("The question is 2,399 characters long")
    expect(page.get_by_label("Question")).to_have_value(pasted)
    expect(page.locator("section.answer")).to_have_count(0)


def test_a_thumbs_down_with_a_note_reaches_the_curators(browsing: Browsing, curator: Persona, corpus: Corpus) -> None:
    page = browsing.page
    browsing.login(curator)
    evidence_for(page, "Who founded the Bryological Society of Wales?", corpus)
    note = f"needs the founding year ({corpus.code})"
    page.get_by_label("Note (optional)").fill(note)
    page.get_by_role("button", name="Not helpful").click()
    expect(page.locator("form.feedback [role=status]")).to_contain_text("your thumbs down and note are saved")
    expect(page.get_by_role("button", name="Not helpful")).to_have_attribute("aria-pressed", "true")
    page.goto("/curation/feedback/?vote=down")
    row = page.locator("table.feedback-list tr", has_text=note)
    expect(row).to_contain_text("Who founded the Bryological Society of Wales?")
    expect(row).to_contain_text("not helpful")
    browsing.shot("search-feedback")


def test_stop_ends_the_answer_with_what_was_written(browsing: Browsing, auditor: Persona, corpus: Corpus) -> None:
    page = browsing.page
    browsing.login(auditor)
    page.goto("/")
    page.get_by_label("Question").fill("Who was the first president of the Bryological Society of Wales?")
    page.get_by_label("Collection").select_option(corpus.collection)
    page.get_by_role("button", name="Ask").click()
    stop = page.locator("section.answer form.stop button")
    expect(stop).to_be_visible(timeout=60_000)
    stop.click()
    finished = page.locator("section.answer:not([data-stream-url])")
    expect(finished).to_contain_text("Stopped at your request", timeout=180_000)
    expect(page.locator("section.answer form.stop")).to_have_count(0)


def test_a_follow_up_keeps_the_previous_question_as_context(
    browsing: Browsing, auditor: Persona, corpus: Corpus
) -> None:
    page = browsing.page
    browsing.login(auditor)
    evidence_for(page, "Who founded the Bryological Society of Wales?", corpus)
    follow = page.get_by_label("Follow-up")
    follow.fill("When was it founded?")
    ask(page, lambda: follow.press("Enter"))
    expect(page.locator("section.answer .asked")).to_have_text(
        "Who founded the Bryological Society of Wales? When was it founded?"
    )
    expect(page.locator("ol.sources")).to_contain_text("society")


def test_image_search_shows_the_close_images_and_the_rest_behind_show_more(
    browsing: Browsing, auditor: Persona, corpus: Corpus
) -> None:
    page = browsing.page
    browsing.login(auditor)
    images_for(page, "a green picture of moss", corpus)
    results = page.locator("section.image-results")
    first = results.locator(":scope > ul.image-grid > li")
    expect(first).to_have_count(1)
    expect(first).to_contain_text(PHOTO_NAME)
    more = results.locator("details.more-images")
    expect(more.locator("summary")).to_have_text(re.compile(r"^Show \d+ more images? \(lower scores\)$"))
    cloth = more.locator("li", has_text=re.compile("red-velvet-cloth"))
    expect(cloth).to_be_hidden()  # one click away, not shown after the good one
    more.locator("summary").click()
    expect(cloth).to_be_visible()
    # The long file name wraps inside its grid cell instead of widening the page.
    name = cloth.locator("a.open-document")
    expect(name).to_contain_text(CLOTH_NAME)
    cell, link = cloth.bounding_box(), name.bounding_box()
    assert cell and link and link["x"] + link["width"] <= cell["x"] + cell["width"] + 1, (cell, link)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    browsing.shot("image-search-more")
