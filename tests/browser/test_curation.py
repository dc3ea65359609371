"""The curation pages in a real browser, as a curator (who is an auditor too): find the two names the
extractor made of one museum, merge one into the other from the entity page, and follow the success
message to the merge's entry in the change log."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.browser.support import DROPPED, KEPT, Browsing, Corpus, Persona

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def test_a_curator_merges_two_names_of_one_entity_and_the_change_log_has_it(
    browsing: Browsing, curator: Persona, corpus: Corpus
) -> None:
    page = browsing.page
    browsing.login(curator)
    page.get_by_role("navigation").first.get_by_role("link", name="Curation", exact=True).click()
    expect(page).to_have_url(re.compile(r"/curation/$"))
    page.get_by_role("main").get_by_role("link", name="Entities", exact=True).first.click()
    expect(page.locator("h1")).to_have_text("Entities")
    page.get_by_label("Name or alias contains").fill("National Museum")
    page.get_by_role("button", name="Search").click()
    # Only mentions in collections the curator reads count: this run's museum.txt, once each.
    results = page.locator("#results")
    kept = results.get_by_role("link", name=re.compile(rf"\b{KEPT}$"))
    dropped = results.get_by_role("link", name=re.compile(rf"\b{DROPPED}$"))
    expect(kept).to_have_count(1)
    expect(dropped).to_have_count(1)
    browsing.shot("curation-entities")

    kept.click()
    expect(page.locator("h1")).to_contain_text(KEPT)
    expect(page.locator("main")).to_contain_text(corpus.collection + "/museum.txt")
    page.get_by_label("Merge with…").fill(DROPPED)
    page.get_by_role("button", name="Find").click()
    candidates = page.get_by_role("region", name="Merge candidates")
    candidate = candidates.locator("tbody tr").filter(has=page.get_by_role("link", name=re.compile(rf"\b{DROPPED}$")))
    expect(candidate).to_have_count(1)
    candidate.get_by_role("button", name="merge it into this entity").click()

    # The merge is previewed first: both names, the result, and nothing changed until confirmed.
    named = {name: rf"(?:the )?{re.escape(name)}" for name in (DROPPED, KEPT)}  # (the extractor may keep "the")
    expect(page.locator("h1")).to_have_text(re.compile(rf"^Merge “{named[DROPPED]}” into “{named[KEPT]}”\?$", re.I))
    expect(page.locator("table.merge-preview")).to_contain_text(DROPPED)
    browsing.shot("curation-merge-preview")
    page.get_by_role("button", name="Merge", exact=True).click()

    status = page.get_by_role("status")
    expect(status).to_contain_text(
        re.compile(rf"Merged “{named[DROPPED]}” into “{named[KEPT]}”: \d+ mentions? moved", re.I)
    )
    expect(status).to_contain_text(re.compile(r"Change-log entry #\d+\."))
    expect(page.locator("h1")).to_contain_text(KEPT)
    expect(page.locator("main")).to_contain_text(re.compile(rf"Also called:.*\b{DROPPED}\b"))
    browsing.shot("curation-merge")
    entry = status.get_by_role("link", name=re.compile(r"^Change-log entry #\d+$"))
    seq = (entry.inner_text()).rsplit("#", 1)[1]
    entry.click()

    expect(page.locator("h1")).to_have_text(f"Entry #{seq} entity.merged")
    canonical = json.loads(page.locator("#canonical").inner_text())
    assert canonical["action"] == "entity.merged", canonical
    assert canonical["actor"] == f"user:{curator.username}", canonical
    assert canonical["subject"]["kind"] == "Entity", canonical
    page.get_by_role("link", name="what changed this subject?").click()
    row = page.locator("table.report tbody tr").filter(has=page.get_by_role("link", name=f"#{seq}", exact=True))
    expect(row).to_have_count(1)
    expect(row).to_contain_text("entity.merged")

    # The dropped entity is gone: its name finds only the entity it went into, where it is an alias now.
    page.goto("/curation/entities/?q=" + DROPPED.replace(" ", "+"))
    expect(page.locator("#results tbody tr")).to_have_count(1)
    expect(page.locator("#results tbody tr").get_by_role("link")).to_have_text(re.compile(rf"\b{KEPT}$"))

    # Undo: the kept entity's page offers it for the log's last merge; the undo is a new entry, and the
    # dropped entity is back with its mentions.
    page.goto("/curation/entities/?q=" + KEPT.replace(" ", "+"))
    page.locator("#results").get_by_role("link", name=re.compile(rf"\b{KEPT}$")).click()
    last = page.get_by_role("region", name="Last merge")
    expect(last).to_contain_text(f"change-log entry #{seq}")
    page.get_by_role("button", name="Undo this merge").click()
    expect(status).to_contain_text(re.compile(rf"Undid the merge of “{named[DROPPED]}”", re.I))
    expect(page.locator("h1")).to_contain_text(DROPPED)
    expect(page.locator("main")).to_contain_text(corpus.collection + "/museum.txt")
    browsing.shot("curation-merge-undone")
    undone = status.get_by_role("link", name=re.compile(r"^Change-log entry #\d+$"))
    undo_seq = int(undone.inner_text().rsplit("#", 1)[1])
    assert undo_seq > int(seq)
    page.goto("/curation/entities/?q=National+Museum")
    expect(page.locator("#results").get_by_role("link", name=re.compile(rf"\b{DROPPED}$"))).to_have_count(1)
    # The kept entity's page now says the merge was undone, with no second undo.
    page.locator("#results").get_by_role("link", name=re.compile(rf"\b{KEPT}$")).click()
    expect(page.get_by_role("region", name="Last merge")).to_contain_text(f"undone by change-log entry #{undo_seq}")
    expect(page.get_by_role("button", name="Undo this merge")).to_have_count(0)
