import pytest
from django.core.management import call_command
from neo4j import Driver

from apps.graph import cypher
from apps.graph.schema import graph_schema_apply, graph_schema_names

pytestmark = pytest.mark.integration

WANTED = {name for name, _ in cypher.SCHEMA_CONSTRAINTS + cypher.SCHEMA_INDEXES}


def test_schema_is_created_and_reapplying_changes_nothing(neo4j_driver: Driver) -> None:
    for name in WANTED:  # start from a database without our schema
        neo4j_driver.execute_query(f"DROP CONSTRAINT {name} IF EXISTS")
        neo4j_driver.execute_query(f"DROP INDEX {name} IF EXISTS")
    first = graph_schema_apply(driver=neo4j_driver)
    assert set(first.created) == WANTED
    assert graph_schema_names(driver=neo4j_driver) >= WANTED
    second = graph_schema_apply(driver=neo4j_driver)
    assert second.created == ()
    assert set(second.existing) == WANTED


def test_unique_ids_are_enforced(empty_graph: Driver) -> None:
    graph_schema_apply(driver=empty_graph)
    empty_graph.execute_query("CREATE (:Entity {id: 'e1', name: 'Ada Lovelace'})")
    with pytest.raises(Exception, match="already exists"):
        empty_graph.execute_query("CREATE (:Entity {id: 'e1', name: 'Someone else'})")


def test_graph_schema_command(neo4j_driver: Driver, capsys: pytest.CaptureFixture[str]) -> None:
    graph_schema_apply(driver=neo4j_driver)
    call_command("graph_schema", verbosity=2)
    out = capsys.readouterr().out
    assert f"graph schema ready: 0 created, {len(WANTED)} already present" in out
    assert "exists   entity_id_unique" in out


OLD_LISTS_GRAPH = """
CREATE (c1:Chunk {id: 'c1', document_id: 'd1', collection: 'lab'}),
       (c2:Chunk {id: 'c2', document_id: 'd2', collection: 'vault'}),
       (r1:Row {id: 'r1', document_id: 'd2', collection: 'vault'})
CREATE (a:Entity {id: 'a', name: 'Ada Lovelace', documents: ['d1', 'd2']}),
       (b:Entity {id: 'b', name: 'Charles Babbage', documents: ['d1', 'd2']})
CREATE (c1)-[:MENTIONS]->(a), (c1)-[:MENTIONS]->(b), (c2)-[:MENTIONS]->(a), (r1)-[:MENTIONS]->(b)
CREATE (a)-[:RELATED {predicate: 'knew', evidence: ['c1', 'c2', 'r1'], documents: ['d1', 'd2'], weight: 3,
                      status: 'approved'}]->(b)
"""


def test_support_lists_of_an_older_graph_become_evidence_edges(empty_graph: Driver) -> None:
    empty_graph.execute_query(OLD_LISTS_GRAPH)
    for _ in range(2):  # a second apply finds nothing left to convert
        graph_schema_apply(driver=empty_graph)
        records, _, _ = empty_graph.execute_query(
            """
            MATCH (a:Entity {id: 'a'})-[r:RELATED]->(b:Entity {id: 'b'})
            RETURN properties(r) AS r, COLLECT { MATCH (a)-[ev:EVIDENCE]->(b) RETURN properties(ev) AS ev
                                                 ORDER BY ev.document } AS evidence,
                   COLLECT { MATCH (e:Entity) WHERE e.documents IS NOT NULL RETURN e.id } AS lists
            """
        )
        [record] = records
        assert record["r"] == {"predicate": "knew", "weight": 3, "status": "approved"}
        evidence = [{**ev, "units": sorted(ev["units"])} for ev in record["evidence"]]
        assert evidence == [
            {"predicate": "knew", "document": "d1", "collection": "lab", "units": ["c1"]},
            {"predicate": "knew", "document": "d2", "collection": "vault", "units": ["c2", "r1"]},
        ]
        assert record["lists"] == []


def test_the_cjk_index_holds_only_cjk_text_and_older_graphs_are_moved_to_it(empty_graph: Driver) -> None:
    graph_schema_apply(driver=empty_graph)
    empty_graph.execute_query("DROP INDEX unit_cjk_fulltext IF EXISTS")
    empty_graph.execute_query(  # the first cjk index, over every unit's text
        "CREATE FULLTEXT INDEX unit_text_cjk_fulltext IF NOT EXISTS"
        " FOR (n:Chunk|Row|Image) ON EACH [n.text, n.language] OPTIONS {indexConfig: {`fulltext.analyzer`: 'cjk'}}"
    )
    empty_graph.execute_query(
        "CREATE (:Chunk {id: 'zh', text: '黑豹队的防守只丢了 308 分', language: 'zh'}),"
        " (:Chunk {id: 'en', text: 'The Panthers defense gave up 308 points', language: 'en'})"
    )
    graph_schema_apply(driver=empty_graph)
    names = graph_schema_names(driver=empty_graph)
    assert "unit_text_cjk_fulltext" not in names and "unit_cjk_fulltext" in names
    empty_graph.execute_query("CALL db.awaitIndexes(60)")
    found = empty_graph.execute_query(
        "CALL db.index.fulltext.queryNodes('unit_cjk_fulltext', $query) YIELD node RETURN collect(node.id) AS ids",
        query="防守 OR 308 OR Panthers",
    ).records[0]["ids"]
    assert found == ["zh"]  # the English chunk is not in it
