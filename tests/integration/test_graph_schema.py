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
