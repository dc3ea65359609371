"""The graph explorer's reads (apps.graph.explore) against a stand-in driver: the reader's collections go
into every statement, an unreadable entity is None, and graphs keep to the caps."""

from __future__ import annotations

from typing import Any

from apps.graph import cypher, explore
from tests.unit.curation.fakes import FakeDriver

ALICE = {"id": "e1", "name": "Alice", "type": "PERSON", "mentions": 2}


def neighbours(count: int, total: int | None = None) -> list[dict[str, Any]]:
    rows = [{"id": f"n{i}", "name": f"N{i}", "type": "ORG", "mentions": 1} for i in range(count)]
    return [{"total": total if total is not None else count, "rows": rows}]


def test_an_empty_query_asks_nothing() -> None:
    driver = FakeDriver()
    assert explore.entities_search(driver=driver, query="  ", collections=["a"]) == []  # type: ignore[arg-type]
    assert driver.calls == []


def test_the_search_sends_the_readers_collections_and_a_lowercased_query() -> None:
    driver = FakeDriver({cypher.GRAPH_ENTITY_SEARCH: [ALICE]})
    found = explore.entities_search(driver=driver, query=" ALI ", collections=("pub",))  # type: ignore[arg-type]
    assert found == [ALICE]
    [params] = driver.params_of(cypher.GRAPH_ENTITY_SEARCH)
    assert params["query"] == "ali" and params["collections"] == ["pub"] and params["limit"] == explore.SEARCH_LIMIT


def test_an_unreadable_entity_has_no_neighbourhood_and_no_units() -> None:
    driver = FakeDriver({cypher.GRAPH_ENTITY: []})
    assert explore.neighbourhood(driver=driver, entity_id="e1", collections=[]) is None  # type: ignore[arg-type]
    assert explore.entity_units(driver=driver, entity_id="e1", collections=[]) is None  # type: ignore[arg-type]
    assert [statement for statement, _ in driver.calls] == [cypher.GRAPH_ENTITY, cypher.GRAPH_ENTITY]


def test_the_neighbourhood_is_capped_and_filtered_inside_the_queries() -> None:
    edge = {
        "source": "e1",
        "target": "n0",
        "type": "RELATED",
        "kind": "founded",
        "strength": 2.0,
        "status": "proposed",
        "documents": 1,
        "evidence_text": "Alice founded N0. Other text.",
        "evidence_start": 0,
        "evidence_end": 17,
    }
    driver = FakeDriver(
        {
            cypher.GRAPH_ENTITY: [ALICE],
            cypher.GRAPH_NEIGHBOURS: neighbours(explore.NODE_CAP - 1, total=500),
            cypher.GRAPH_EDGES: [edge],
        }
    )
    filters = explore.Filters(types=("ORG",), relations=("founded",))
    graph = explore.neighbourhood(driver=driver, entity_id="e1", collections=["pub"], filters=filters)  # type: ignore[arg-type]
    assert graph is not None
    assert len(graph["nodes"]) == explore.NODE_CAP and graph["nodes"][0]["center"]
    assert graph["neighbours"] == {"total": 500, "shown": explore.NODE_CAP - 1}
    assert graph["truncated"] and graph["caps"] == {"nodes": explore.NODE_CAP, "edges": explore.EDGE_CAP}
    assert graph["edges"][0]["evidence"] == "Alice founded N0."
    [near] = driver.params_of(cypher.GRAPH_NEIGHBOURS)
    assert near["limit"] == explore.NODE_CAP - 1 and near["types"] == ["ORG"] and near["relations"] == ["founded"]
    [among] = driver.params_of(cypher.GRAPH_EDGES)
    assert among["limit"] == explore.EDGE_CAP and len(among["ids"]) == explore.NODE_CAP
    assert all(params["collections"] == ["pub"] for _, params in driver.calls)


def test_admins_read_with_null_collections() -> None:
    driver = FakeDriver({cypher.GRAPH_ENTITY: [ALICE], cypher.GRAPH_NEIGHBOURS: neighbours(0), cypher.GRAPH_EDGES: []})
    graph = explore.neighbourhood(driver=driver, entity_id="e1", collections=None)  # type: ignore[arg-type]
    assert graph is not None and not graph["truncated"]
    assert all(params["collections"] is None for _, params in driver.calls)


def path(*nodes: str, relationships: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"nodes": list(nodes), "relationships": list(relationships), "score": 1.0}


def test_whole_paths_are_kept_until_the_cap() -> None:
    long = [str(i) for i in range(explore.NODE_CAP - 2)]
    paths = [
        (long, ["RELATED"] * (len(long) - 1)),
        (["a", "b", "c"], ["MENTIONS", "MENTIONS"]),
        (["0", "a"], ["RELATED"]),
    ]
    ids, steps, truncated = explore.capped_paths(paths)
    assert truncated
    assert ids == [*long, "a"] and len(ids) <= explore.NODE_CAP
    assert ("0", "a") in {(s.source, s.target) for s in steps}


def test_the_answer_subgraph_leaves_out_what_the_reader_cannot_see_and_marks_the_sources() -> None:
    sources = [
        {"id": "c1", "number": 1, "path_details": [path("e1", "c1", relationships=("MENTIONS",))]},
        {"id": "c2", "number": 2, "path_details": [path("e1", "e2", "c2", relationships=("RELATED", "MENTIONS"))]},
    ]
    readable_nodes = [
        {"id": "e1", "label": "Entity", "name": "Alice", "type": "PERSON", "document": None},
        {"id": "c1", "label": "Chunk", "name": "Alice wrote.", "type": None, "document": "a.txt"},
    ]  # e2 and c2 are of a collection the reader cannot read
    driver = FakeDriver({cypher.GRAPH_PATH_NODES: readable_nodes, cypher.GRAPH_PATH_PREDICATES: []})
    graph = explore.answer_subgraph(driver=driver, sources=sources, collections=["pub"])  # type: ignore[arg-type]
    assert [n["id"] for n in graph["nodes"]] == ["e1", "c1"]
    assert [n["source"] for n in graph["nodes"]] == [False, True]
    assert [(e["source"], e["target"], e["kind"]) for e in graph["edges"]] == [("e1", "c1", "mentioned in")]
    assert all(params["collections"] == ["pub"] for _, params in driver.calls)


def test_old_answers_paths_are_plain_node_lists() -> None:
    assert explore.answer_paths([{"paths": [["e1", "c1"]]}]) == [(["e1", "c1"], [])]
