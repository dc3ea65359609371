"""The graph explorer (/graph/) in a real browser against the running stack: search an entity of the
corpus, see its neighbourhood drawn by cytoscape.js with the caps stated, click a neighbour to expand it
(more nodes, the units that mention it listed), hover a node for its facts, and hide an entity type and
a relation kind with the filters. Any console error fails the test (the ``browsing`` fixture)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import Browsing, Corpus, Persona

pytestmark = [pytest.mark.integration, pytest.mark.browser]

SEARCHED = "Bryological"
COUNT = re.compile(r"^(\d+) nodes?, (\d+) edges? shown$")
READY = "#graph-explorer[data-ready=true]"


def shown(page: Page) -> tuple[int, int]:
    text = page.locator("#graph-count").inner_text().strip()
    match = COUNT.match(text)
    assert match, text
    return int(match[1]), int(match[2])


def drawn_ids(page: Page) -> list[str]:
    return list(page.evaluate("() => window.ragkgExplorer.cy.nodes().map((n) => n.id())"))


def neighbourhood_ids(page: Page, entity_id: str, collection: str) -> set[str]:
    response = page.request.get(f"/graph/api/neighbourhood/{entity_id}?{urlencode({'collections': collection})}")
    assert response.ok, response.status
    body: dict[str, Any] = response.json()
    return {node["id"] for node in body["nodes"]}


def expandable(page: Page, collection: str) -> str | None:
    """A drawn neighbour whose own neighbourhood holds a node not drawn yet."""
    drawn = set(drawn_ids(page))
    center = page.locator("#graph-explorer").get_attribute("data-entity")
    for node in sorted(drawn - {center}):
        if neighbourhood_ids(page, node, collection) - drawn:
            return node
    return None


def click_node(page: Page, node_id: str, *, hover: bool = False) -> None:
    """Click (or only hover) the node where cytoscape drew it on the canvas."""
    page.locator("#graph-canvas").scroll_into_view_if_needed()
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    x, y = page.evaluate(
        """(id) => {
          const cy = window.ragkgExplorer.cy, p = cy.getElementById(id).renderedPosition();
          const box = cy.container().getBoundingClientRect();
          return [box.left + p.x, box.top + p.y];
        }""",
        node_id,
    )
    page.mouse.move(x - 20, y - 20)
    page.mouse.move(x, y, steps=4)
    if not hover:
        page.mouse.click(x, y)


def open_an_expandable_entity(page: Page, corpus: Corpus) -> str:
    """Search the corpus, open the first result and, when none of its neighbours would add a node, one of
    its neighbours instead; return the neighbour to expand."""
    page.goto("/graph/?" + urlencode({"q": SEARCHED, "collections": corpus.collection}))
    results = page.locator(".graph-results li a")
    expect(results.first).to_be_visible()
    candidates = [str(href) for href in results.evaluate_all("(links) => links.map((a) => a.href)")]
    for href in candidates:
        page.goto(href)
        page.wait_for_selector(READY)
        node = expandable(page, corpus.collection)
        if node:
            return node
        for neighbour in drawn_ids(page)[1:]:
            page.goto("/graph/?" + urlencode({"entity": neighbour, "collections": corpus.collection}))
            page.wait_for_selector(READY)
            node = expandable(page, corpus.collection)
            if node:
                return node
    raise AssertionError("no drawn entity of the corpus has a neighbour to expand")


def test_search_draw_expand_and_filter(browsing: Browsing, auditor: Persona, corpus: Corpus) -> None:
    page = browsing.page
    browsing.login(auditor)
    node = open_an_expandable_entity(page, corpus)
    expect(page.locator("#graph-canvas canvas").first).to_be_attached()
    expect(page.locator("#graph-cap")).to_have_text("60 nodes, 150 edges")
    expect(page.locator(".graph-search .meta")).to_contain_text("capped at 60 nodes and 150 edges")
    nodes, edges = shown(page)
    assert nodes >= 2 and edges >= 1, (nodes, edges)
    assert nodes == len(drawn_ids(page))

    click_node(page, node, hover=True)
    expect(page.locator("#graph-tooltip")).to_be_visible()
    expect(page.locator("#graph-tooltip")).to_contain_text("mentions")

    click_node(page, node)
    page.wait_for_function("(n) => window.ragkgExplorer.cy.nodes().length > n", arg=nodes)
    expanded, _ = shown(page)
    assert expanded > nodes
    expect(page.locator("#graph-units h3")).to_contain_text("mentioned in")
    expect(page.locator("#graph-units li").first).to_contain_text(corpus.collection)

    # Hide the type of some drawn entity other than the centre: fewer nodes are shown.
    hidden_type = page.evaluate(
        """() => window.ragkgExplorer.cy.nodes("[label = 'Entity']").filter((n) => !n.hasClass('center'))
                 .map((n) => n.data('type'))[0]"""
    )
    page.locator("#graph-types label", has_text=re.compile(f"^{re.escape(hidden_type or '(none)')}$")).click()
    after_type, edges_after_type = shown(page)
    assert after_type < expanded
    # Hide a relation kind still shown: fewer edges.
    kind = page.evaluate("() => window.ragkgExplorer.cy.edges().not('.filtered').map((e) => e.data('kind'))[0]")
    if kind is not None:
        page.locator("#graph-relations label", has_text=re.compile(f"^{re.escape(kind)}$")).click()
        assert shown(page)[1] < edges_after_type
    browsing.shot("graph-explorer", readme="graph-explorer.png")


def test_the_outsider_finds_nothing_of_the_private_corpus(
    browsing: Browsing, outsider: Persona, corpus: Corpus
) -> None:
    page = browsing.page
    browsing.login(outsider)
    page.goto("/graph/?" + urlencode({"q": SEARCHED, "collections": corpus.collection}))
    expect(page.locator(".graph-results")).to_contain_text("No entity matches.")
    assert corpus.collection not in page.locator("#graph-collections option").all_inner_texts()
    assert corpus.code not in page.content()
