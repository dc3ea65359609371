"""A Chinese document in a real browser: a curator uploads two articles of XQuAD's Chinese edition
into a new collection, asks in Chinese on the search page and gets the right answer, in Chinese
words, cited to the sentence that says it (highlighted in the source); the document viewer says the
document is Chinese."""
# ruff: noqa: RUF001 - Chinese text has full-width punctuation

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.browser.support import Browsing, Persona
from tests.browser.test_search import ask
from tests.browser.test_upload import INGEST_TIMEOUT_MS

pytestmark = [pytest.mark.integration, pytest.mark.browser]

ARTICLES = ("Super_Bowl_50", "Warsaw")
QUESTION = "黑豹队的防守丢了多少分？"  # XQuAD 56beb4343aeaaa14008c925b, answer 308
ANSWER = "308"


def article_files(folder: Path) -> list[Path]:
    """The articles' paragraphs, one text file each, from ../shared/data's XQuAD (Chinese)."""
    squad = json.loads((Path(settings.DEMO_DATA_DIR) / "multilingual/xquad/xquad.zh.json").read_text())
    files = []
    for article in squad["data"]:
        if article["title"] in ARTICLES:
            path = folder / f"{article['title'].lower()}.txt"
            path.write_text("\n\n".join(paragraph["context"] for paragraph in article["paragraphs"]))
            files.append(path)
    assert len(files) == len(ARTICLES)
    return files


def test_a_chinese_document_answers_a_chinese_question_with_the_cited_sentence_highlighted(
    browsing: Browsing, uploader: Persona, tmp_path: Path
) -> None:
    page = browsing.page
    collection = f"zh-{uuid.uuid4().hex[:8]}"
    browsing.login(uploader)
    page.goto("/curation/documents/")
    page.get_by_label(re.compile(r"^Files")).set_input_files(article_files(tmp_path))
    upload = page.get_by_role("region", name="Upload")
    upload.get_by_label("Collection", exact=True).select_option(label="a new collection…")
    page.get_by_label("New collection name").fill(collection)
    page.get_by_role("button", name="Upload and ingest").click()
    expect(page.locator("#progress strong").first).to_have_text("done", timeout=INGEST_TIMEOUT_MS)

    page.goto("/")
    page.get_by_label("Question").fill(QUESTION)
    page.get_by_label("Collection").select_option(collection)
    ask(page, lambda: page.get_by_role("button", name="Ask").click())
    answer = page.locator(".answer-text")
    expect(answer).to_contain_text(ANSWER)
    cites = answer.locator("a.cite")
    assert cites.count() >= 1, f"no [n] citation in {answer.inner_text()!r}"
    cited = page.locator(f"ol.sources li{cites.first.get_attribute('href')}")
    expect(cited).to_contain_text("super_bowl_50.txt")
    expect(cited.locator("mark").first).to_contain_text(ANSWER)  # the sentence that says it
    browsing.shot("search-answer-chinese")

    cited.get_by_role("link", name="super_bowl_50.txt").first.click()
    expect(page.locator(".document-view .meta .language")).to_have_text("zh")
