"""The graph paths behind each source, drawn as wrapping steps (node, predicate, node, …): names,
predicates, escaping, a lone seed left out, and the fallback when the graph cannot be reached."""

from __future__ import annotations

import re
from typing import Any

from django.template.loader import render_to_string
from neo4j.exceptions import ServiceUnavailable

from apps.answers.paths import STEP, NodeName, path_drawing, path_ids, path_names, source_drawings

SEED, ALICE, BOB, UNIT = "a" * 32, "b" * 32, "c" * 32, "d" * 32
PATH = {"nodes": [SEED, ALICE, BOB, UNIT], "relationships": ["MENTIONS", "RELATED", "MENTIONS"], "score": 0.42}
NAMES = {
    SEED: NodeName("Chunk", "The society was founded in 1912."),
    ALICE: NodeName("Entity", "Bryological Society of Wales"),
    BOB: NodeName("Entity", "<script>alert(1)</script>"),
}
SOURCE = {"id": UNIT, "number": 2, "document": "society.txt", "kind": "chunk", "path_details": [PATH]}


class FakeDriver:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def execute_query(self, query: str, **params: Any) -> tuple[list[dict[str, Any]], None, None]:
        self.calls.append((query, params))
        if self.fail:
            raise ServiceUnavailable("no graph")
        if "pairs" in params:
            return [{"source": ALICE, "target": BOB, "predicate": "founded by"}], None, None
        rows = [{"id": node, "label": name.label, "name": name.name} for node, name in NAMES.items()]
        return rows, None, None


def test_a_path_is_laid_out_left_to_right_with_labelled_nodes_and_edges() -> None:
    drawing = path_drawing(
        PATH, names=NAMES, predicates={(BOB, ALICE): "founded by"}, sources={UNIT: "[2] society.txt"}
    )
    assert [n.x for n in drawing.nodes] == [60, 60 + STEP, 60 + 2 * STEP, 60 + 3 * STEP]
    assert drawing.width == 3 * STEP + 120
    assert [n.entity for n in drawing.nodes] == [False, True, True, False]
    assert drawing.nodes[0].title == drawing.nodes[0].text == "chunk: The society was founded in 1912."
    assert drawing.nodes[3].text == "[2] society.txt"
    assert [e.label for e in drawing.edges] == ["mentions", "founded by", "mentioned in"]
    assert [(e.x1, e.x2) for e in drawing.edges] == [(60, 230), (230, 400), (400, 570)]
    assert drawing.score == 0.42
    assert "—founded by→" in drawing.description


def test_without_names_the_drawing_shows_short_ids_and_relationship_types() -> None:
    drawing = path_drawing(PATH, names={}, predicates={}, sources={})
    assert [n.text for n in drawing.nodes] == [
        f"node {SEED[:8]}",
        f"entity {ALICE[:8]}",
        f"entity {BOB[:8]}",
        f"node {UNIT[:8]}",
    ]
    assert [e.label for e in drawing.edges] == ["mentions", "related", "mentioned in"]
    seed_only = path_drawing({"nodes": [UNIT], "relationships": [], "score": 0.9}, names={}, predicates={}, sources={})
    assert len(seed_only.nodes) == 1 and seed_only.edges == () and seed_only.width == 120
    following = path_drawing({"nodes": [SEED, UNIT], "relationships": ["NEXT"]}, names={}, predicates={}, sources={})
    assert [n.entity for n in following.nodes] == [False, False] and following.edges[0].label == "next"


def test_the_steps_are_escaped_and_read_in_order() -> None:
    [drawing] = source_drawings([SOURCE], names=NAMES, predicates={(ALICE, BOB): "founded by"})[UNIT]
    html = render_to_string("answers/path_steps.html", {"drawing": drawing})
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert html.count('class="path-node entity"') == 2 and html.count('class="path-node unit"') == 2
    items = re.findall(r"<li [^>]*>([^<]*)</li>", html)
    assert items[1:4] == ["mentions →", "Bryological Society of Wales", "founded by →"]
    assert items[-1] == "[2] society.txt" and "3 steps through the graph · score 0.420" in html
    assert 'aria-label="chunk: The society' in html


def test_a_lone_seed_is_no_path() -> None:
    seed_only = {**SOURCE, "path_details": [{"nodes": [UNIT], "relationships": [], "score": 0.9}, PATH]}
    drawings = source_drawings([seed_only], names=NAMES, predicates={})[UNIT]
    assert [d.hops for d in drawings] == [3]


def test_names_come_from_two_graph_reads_and_a_down_graph_gives_none() -> None:
    assert path_ids([SOURCE]) == ([SEED, ALICE, BOB, UNIT], [[ALICE, BOB]])
    driver = FakeDriver()
    names, predicates = path_names(driver=driver, sources=[SOURCE], collections=["moss"])  # type: ignore[arg-type]
    assert names[ALICE] == NodeName("Entity", "Bryological Society of Wales")
    assert predicates == {(ALICE, BOB): "founded by"}
    assert driver.calls[0][1]["collections"] == ["moss"] and driver.calls[1][1]["pairs"] == [[ALICE, BOB]]
    assert path_names(driver=FakeDriver(fail=True), sources=[SOURCE], collections=None) == ({}, {})  # type: ignore[arg-type]
    quiet = FakeDriver()
    assert path_names(driver=quiet, sources=[{"id": UNIT, "path_details": []}], collections=None) == ({}, {})  # type: ignore[arg-type]
    assert quiet.calls == []
