"""The change log against the real Neo4j: ingestion, curation and deletion write entries, the
graph follows them, and ``ledger verify --graph`` notices a graph changed behind ragkg's back."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from neo4j import Driver, GraphDatabase

from apps.curation import undo
from apps.curation.services import (
    CurationError,
    entity_delete,
    entity_merge,
    entity_rename,
    entity_unmerge,
    relation_review,
)
from apps.graph import cypher
from apps.ingest.services import default_extractor, document_delete, upload_ingest
from apps.ledger.adopt import documents_adopt
from apps.ledger.content import content_hash
from apps.ledger.graph import document_contents, graph_changes_apply
from apps.ledger.models import ChangeEntry, GraphChange
from apps.ledger.services import snapshot
from apps.ledger.verify import log_verify
from tests.integration.test_ingest_graph import ADA, BABBAGE, vectors_dir  # noqa: F401
from tests.support import free_port

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def ingest(driver: Driver, name: str, text: str, actor: str = "user:ana") -> str:
    [outcome] = upload_ingest(
        driver=driver, name=name, data=text.encode(), collection="lab", extractor=default_extractor(), actor=actor
    )
    assert outcome.document_id, outcome
    return outcome.document_id


def entity_ids(driver: Driver) -> dict[str, str]:
    records, _, _ = driver.execute_query("MATCH (e:Entity) RETURN e.name AS name, e.id AS id")
    return {record["name"]: record["id"] for record in records}


def entries() -> list[tuple[str, str, str]]:
    return list(ChangeEntry.objects.order_by("seq").values_list("action", "subject_id", "actor"))


def graph_ok(driver: Driver) -> None:
    report = log_verify(chain=None, driver=driver)
    assert report.ok, report.problems


def test_ingesting_updating_and_deleting_a_document_write_entries_the_graph_agrees_with(empty_graph: Driver) -> None:
    first = ingest(empty_graph, "ada.txt", ADA)
    assert entries() == [("document.ingested", "lab/ada.txt", "user:ana")]
    logged = ChangeEntry.objects.get(seq=0)
    assert logged.ref == first and logged.before is None
    assert content_hash(document_contents(driver=empty_graph, document_ids=[first])[first]) == logged.after
    graph_ok(empty_graph)

    ingest(empty_graph, "ada.txt", ADA)  # the same bytes again: nothing changed, nothing logged
    second = ingest(empty_graph, "ada.txt", ADA + " She died in 1852.", actor="user:bo")
    assert entries()[1:] == [("document.updated", "lab/ada.txt", "user:bo")]
    updated = ChangeEntry.objects.get(seq=1)
    assert updated.before == logged.after and updated.ref == second
    graph_ok(empty_graph)

    assert document_delete(driver=empty_graph, document_id=second, actor="curator:cy")
    assert entries()[2:] == [("document.deleted", "lab/ada.txt", "curator:cy")]
    deleted = ChangeEntry.objects.get(seq=2)
    assert deleted.before == updated.after and deleted.after is None
    graph_ok(empty_graph)


def test_curation_is_logged_first_and_applied_to_the_graph(empty_graph: Driver) -> None:
    ingest(empty_graph, "ada.txt", ADA)
    ingest(empty_graph, "babbage.txt", BABBAGE)
    ids = entity_ids(empty_graph)
    babbage, lovelace, ada = ids["Charles Babbage"], ids["Lovelace"], ids["Ada Lovelace"]

    renamed = entity_rename(driver=empty_graph, entity_id=babbage, name="Charles  Babbage FRS", actor="curator:ana")
    assert renamed.applied
    records, _, _ = empty_graph.execute_query(
        "MATCH (e:Entity {id: $id}) RETURN e.name AS name, e.aliases AS aliases", id=babbage
    )
    assert records[0]["name"] == "Charles Babbage FRS" and "Charles Babbage" in records[0]["aliases"]

    merged = entity_merge(driver=empty_graph, keep=ada, drop=lovelace, actor="curator:ana")
    assert merged.applied and lovelace not in entity_ids(empty_graph)
    records, _, _ = empty_graph.execute_query(
        "MATCH (e:Entity {id: $id}) RETURN e.aliases AS aliases, COUNT { ()-[:MENTIONS]->(e) } AS mentions", id=ada
    )
    assert "Lovelace" in records[0]["aliases"] and records[0]["mentions"] >= 2
    after = snapshot(ChangeEntry.objects.get(seq=merged.seq).after)
    assert after is not None and after["merged_into"] == ada

    relation, _, _ = empty_graph.execute_query(
        "MATCH (a:Entity)-[r:RELATED]->(b:Entity) RETURN a.id AS a, r.predicate AS p, b.id AS b LIMIT 1"
    )
    source, predicate, target = relation[0]["a"], relation[0]["p"], relation[0]["b"]
    relation_review(
        driver=empty_graph, source=source, predicate=predicate, target=target, approve=False, actor="curator:ana"
    )
    with pytest.raises(CurationError, match="already rejected"):
        relation_review(driver=empty_graph, source=source, predicate=predicate, target=target, approve=False, actor="x")

    entity_delete(driver=empty_graph, entity_id=ids["London"], actor="curator:ana")
    assert "London" not in entity_ids(empty_graph)
    actions = [action for action, _, _ in entries()]
    assert actions == [
        "document.ingested",
        "document.ingested",
        "entity.renamed",
        "entity.merged",
        "relation.rejected",
        "entity.deleted",
    ]
    graph_ok(empty_graph)
    with pytest.raises(CurationError, match="no entity"):
        entity_rename(driver=empty_graph, entity_id="no-such-entity", name="x", actor="x")


def test_a_curation_change_waits_for_neo4j_and_is_applied_later(empty_graph: Driver) -> None:
    ingest(empty_graph, "babbage.txt", BABBAGE)
    babbage = entity_ids(empty_graph)["Charles Babbage"]
    with GraphDatabase.driver(f"bolt://127.0.0.1:{free_port()}", auth=("neo4j", "x"), connection_timeout=1) as away:
        # The rename reads the entity through the live driver, then Neo4j "goes away" for the write.
        from django.db import transaction

        from apps.ledger.content import entity_content
        from apps.ledger.services import Change, entries_append

        before = entity_content(entity_id=babbage, name="Charles Babbage", type_="PERSON")
        records, _, _ = empty_graph.execute_query("MATCH (e:Entity {id: $id}) RETURN e.type AS type", id=babbage)
        before["type"] = records[0]["type"]
        after = {**before, "name": "C. Babbage"}
        operation = {"cypher": "ENTITY_RENAME", "params": {"id": babbage, "name": "C. Babbage"}}
        with transaction.atomic():
            entries_append(
                actor="curator:ana",
                changes=[Change("entity.renamed", "Entity", babbage, before, after, operation=operation)],
            )
        assert graph_changes_apply(driver=away) == (0, 1)
    pending = GraphChange.objects.get()
    assert pending.attempts == 1 and pending.error
    report = log_verify(chain=None, driver=empty_graph)
    assert "not applied yet" in report.problems[0].message
    assert graph_changes_apply(driver=empty_graph) == (1, 0)
    assert "C. Babbage" in entity_ids(empty_graph)
    graph_ok(empty_graph)


def test_verify_graph_names_what_was_changed_behind_ragkgs_back(empty_graph: Driver) -> None:
    ingest(empty_graph, "ada.txt", ADA)
    ingest(empty_graph, "babbage.txt", BABBAGE)
    babbage = entity_ids(empty_graph)["Charles Babbage"]
    entity_rename(driver=empty_graph, entity_id=babbage, name="Charles Babbage FRS", actor="curator:ana")
    graph_ok(empty_graph)

    empty_graph.execute_query(
        "MATCH (d:Document {path: 'babbage.txt'})-[:HAS_CHUNK]->(c:Chunk) SET c.text = 'He taught at Oxford.'"
    )
    empty_graph.execute_query("MATCH (e:Entity {id: $id}) SET e.name = 'Someone Else'", id=babbage)
    empty_graph.execute_query(
        "CREATE (:Document {id: 'smuggled', collection: 'lab', path: 'smuggled.txt', sha256: 'x'})"
    )
    report = log_verify(chain=None, driver=empty_graph)
    messages = [problem.message for problem in report.problems]
    assert report.problems[0].seq == 1 and "document lab/babbage.txt in the graph differs from entry #1" in messages[0]
    assert any("entity" in m and "differs from entry #2" in m for m in messages)
    assert any("lab/smuggled.txt (smuggled) is in the graph but not in the log" in m for m in messages)
    assert len(messages) == 3
    assert settings.NEO4J_DATABASE  # the test Neo4j, never a development one


def test_documents_from_before_the_log_are_adopted(empty_graph: Driver) -> None:
    ingest(empty_graph, "ada.txt", ADA)
    ingest(empty_graph, "babbage.txt", BABBAGE)
    with connection.cursor() as cursor:  # as if both had been ingested before the log existed
        cursor.execute("DELETE FROM ledger_changeentry")
        cursor.execute("DELETE FROM ledger_ledgerhead")
        cursor.execute("DELETE FROM ledger_merklenode")
    assert len(log_verify(chain=None, driver=empty_graph).problems) == 2
    assert sorted(documents_adopt(driver=empty_graph)) == ["lab/ada.txt", "lab/babbage.txt"]
    assert documents_adopt(driver=empty_graph) == []
    assert set(ChangeEntry.objects.values_list("actor", flat=True)) == {"system:adopt"}
    graph_ok(empty_graph)


MERGE_GRAPH = """
CREATE (k:Entity {id: 'k', name: 'Ada Lovelace', type: 'PERSON', aliases: []}),
       (d:Entity {id: 'd', name: 'Lovelace', type: 'PERSON', aliases: ['A. L.']}),
       (a:Entity {id: 'a', name: 'Babbage', type: 'PERSON', aliases: []}),
       (b:Entity {id: 'b', name: 'London', type: 'GPE', aliases: []})
CREATE (d)-[:RELATED {predicate: 'knew', status: 'approved', weight: 2}]->(a),
       (d)-[:EVIDENCE {predicate: 'knew', document: 'd1', collection: 'c', units: ['u1', 'u8']}]->(a),
       (k)-[:RELATED {predicate: 'knew', weight: 2}]->(a),
       (k)-[:EVIDENCE {predicate: 'knew', document: 'd2', collection: 'c', units: ['u2']}]->(a),
       (k)-[:EVIDENCE {predicate: 'knew', document: 'd1', collection: 'c', units: ['u1']}]->(a),
       (b)-[:RELATED {predicate: 'in', status: 'rejected', weight: 2}]->(d),
       (b)-[:EVIDENCE {predicate: 'in', document: 'd1', collection: 'c', units: ['u3', 'u4']}]->(d),
       (a)-[:RELATED {predicate: 'knew', weight: 1}]->(d),
       (a)-[:EVIDENCE {predicate: 'knew', document: 'd3', collection: 'c', units: ['u5']}]->(d),
       (d)-[:RELATED {predicate: 'same_as', weight: 1}]->(k),
       (d)-[:EVIDENCE {predicate: 'same_as', document: 'd1', collection: 'c', units: ['u6']}]->(k),
       (d)-[:RELATED {predicate: 'is', weight: 1}]->(d),
       (d)-[:EVIDENCE {predicate: 'is', document: 'd1', collection: 'c', units: ['u7']}]->(d)
"""

RELATIONS = """
MATCH (s:Entity)-[r:RELATED]->(t:Entity)
RETURN s.id AS s, r.predicate AS p, t.id AS t, r.status AS status, r.weight AS weight,
       COLLECT { MATCH (s)-[ev:EVIDENCE {predicate: r.predicate}]->(t)
                 RETURN [ev.document, ev.units] ORDER BY ev.document } AS evidence
ORDER BY s, p, t
"""


def test_a_merge_moves_relations_both_ways_keeping_direction_and_properties(empty_graph: Driver) -> None:
    empty_graph.execute_query(MERGE_GRAPH, database_=settings.NEO4J_DATABASE)
    for _ in range(2):  # applying it again changes nothing
        empty_graph.execute_query(cypher.ENTITY_MERGE, keep="k", drop="d", database_=settings.NEO4J_DATABASE)
        records, _, _ = empty_graph.execute_query(RELATIONS, database_=settings.NEO4J_DATABASE)
        assert [dict(record) for record in records] == [
            {"s": "a", "p": "knew", "t": "k", "evidence": [["d3", ["u5"]]], "status": None, "weight": 1},
            {"s": "b", "p": "in", "t": "k", "evidence": [["d1", ["u3", "u4"]]], "status": "rejected", "weight": 2},
            {
                "s": "k",
                "p": "knew",
                "t": "a",
                "evidence": [["d1", ["u1", "u8"]], ["d2", ["u2"]]],
                "status": "approved",
                "weight": 3,
            },
        ]
    records, _, _ = empty_graph.execute_query(
        "MATCH (e:Entity {id: 'k'}) RETURN e.aliases AS aliases, COUNT { ()-[:EVIDENCE]->() } AS evidence",
        database_=settings.NEO4J_DATABASE,
    )
    assert records[0]["aliases"] == ["Lovelace", "A. L."] and records[0]["evidence"] == 4
    assert sorted(entity_ids(empty_graph).values()) == ["a", "b", "k"]


UNDO_GRAPH = """
CREATE (k:Entity {id: 'k', name: 'Ada Lovelace', type: 'PERSON', aliases: [], aliases_text: 'Ada Lovelace'}),
       (d:Entity {id: 'd', name: 'Lovelace', type: 'PERSON', aliases: ['A. L.'], aliases_text: 'Lovelace A. L.'}),
       (a:Entity {id: 'a', name: 'Babbage', type: 'PERSON', aliases: [], aliases_text: 'Babbage'})
CREATE (c1:Chunk {id: 'c1', text: 'Lovelace met Babbage.'}), (c2:Chunk {id: 'c2', text: 'Ada Lovelace wrote.'}),
       (r1:Row {id: 'r1', text: 'Lovelace | 1815'})
CREATE (c1)-[:MENTIONS {start: 0, end: 8, sentence: 0}]->(d), (c2)-[:MENTIONS {start: 0, end: 12, sentence: 0}]->(k),
       (r1)-[:MENTIONS {start: 0, end: 8, sentence: 0, linked: true}]->(d),
       (c1)-[:MENTIONS {start: 13, end: 20, sentence: 0}]->(a)
CREATE (d)-[:RELATED {predicate: 'knew', status: 'approved', weight: 2}]->(a),
       (d)-[:EVIDENCE {predicate: 'knew', document: 'd1', collection: 'c', units: ['u1', 'u8']}]->(a),
       (k)-[:RELATED {predicate: 'knew', weight: 2}]->(a),
       (k)-[:EVIDENCE {predicate: 'knew', document: 'd2', collection: 'c', units: ['u2']}]->(a),
       (k)-[:EVIDENCE {predicate: 'knew', document: 'd1', collection: 'c', units: ['u1']}]->(a),
       (a)-[:RELATED {predicate: 'met', weight: 1}]->(d),
       (a)-[:EVIDENCE {predicate: 'met', document: 'd3', collection: 'c', units: ['u5']}]->(d),
       (d)-[:RELATED {predicate: 'same_as', weight: 1}]->(k),
       (d)-[:EVIDENCE {predicate: 'same_as', document: 'd1', collection: 'c', units: ['u6']}]->(k),
       (d)-[:SYNONYM {score: 0.91, status: 'suggested'}]->(k)
"""

GRAPH_STATE = """
CALL () { MATCH (e:Entity) RETURN collect([e.id, properties(e)]) AS entities }
CALL () { MATCH (s)-[r]->(t) RETURN collect([s.id, type(r), t.id, properties(r)]) AS edges }
RETURN entities, edges
"""


def graph_state(driver: Driver) -> tuple[list[Any], list[Any]]:
    records, _, _ = driver.execute_query(GRAPH_STATE, database_=settings.NEO4J_DATABASE)
    return sorted(records[0]["entities"]), sorted(records[0]["edges"], key=repr)


def test_undoing_the_last_merge_brings_the_graph_back_as_it_was(empty_graph: Driver) -> None:
    empty_graph.execute_query(UNDO_GRAPH, database_=settings.NEO4J_DATABASE)
    empty_graph.execute_query(
        "MATCH (e:Entity {id: 'd'}) CALL db.create.setNodeVectorProperty(e, 'name_vector', [0.5, 0.25, 0.125])",
        database_=settings.NEO4J_DATABASE,
    )
    before = graph_state(empty_graph)
    merged = entity_merge(driver=empty_graph, keep="k", drop="d", actor="curator:ana")
    assert merged.applied and graph_state(empty_graph) != before
    last = undo.last_merge()
    assert last is not None and (last.seq, last.keep, last.drop, last.drop_name) == (merged.seq, "k", "d", "Lovelace")
    assert last.refusal == ""

    with pytest.raises(CurationError, match="only the last merge"):
        entity_unmerge(driver=empty_graph, seq=merged.seq + 5, actor="curator:bo")
    unmerged = entity_unmerge(driver=empty_graph, seq=merged.seq, actor="curator:bo")
    assert unmerged.applied and graph_state(empty_graph) == before
    assert entries()[-2:] == [("entity.merged", "d", "curator:ana"), ("entity.unmerged", "d", "curator:bo")]
    entry = ChangeEntry.objects.get(seq=unmerged.seq)
    assert entry.before == ChangeEntry.objects.get(seq=merged.seq).after
    assert snapshot(entry.after) == {"kind": "Entity", "id": "d", "name": "Lovelace", "type": "PERSON"}
    graph_ok(empty_graph)

    # Applied again (a retried graph write), it changes nothing; and the merge cannot be undone twice.
    change = GraphChange.objects.get(entry_id=unmerged.seq)
    empty_graph.execute_query(cypher.ENTITY_UNMERGE, **change.operation["params"], database_=settings.NEO4J_DATABASE)
    assert graph_state(empty_graph) == before
    with pytest.raises(CurationError, match="undone by change-log entry"):
        entity_unmerge(driver=empty_graph, seq=merged.seq, actor="curator:bo")


def test_a_merge_cannot_be_undone_once_an_entity_of_it_changed(empty_graph: Driver) -> None:
    empty_graph.execute_query(UNDO_GRAPH, database_=settings.NEO4J_DATABASE)
    merged = entity_merge(driver=empty_graph, keep="k", drop="d", actor="curator:ana")
    # New knowledge after the merge: a mention of the kept entity stays with it through an undo.
    renamed = entity_rename(driver=empty_graph, entity_id="k", name="Augusta Ada King", actor="curator:ana")
    with pytest.raises(CurationError, match=f"changed after the merge \\(change-log entry #{renamed.seq}"):
        entity_unmerge(driver=empty_graph, seq=merged.seq, actor="curator:bo")
    assert "d" not in entity_ids(empty_graph).values()


def test_a_merge_recorded_with_support_lists_is_not_undone(empty_graph: Driver) -> None:
    empty_graph.execute_query(UNDO_GRAPH, database_=settings.NEO4J_DATABASE)
    merged = entity_merge(driver=empty_graph, keep="k", drop="d", actor="curator:ana")
    change = GraphChange.objects.get(entry_id=merged.seq)
    change.operation["undo"]["keep_documents_added"] = ["d1"]  # as merges were recorded before evidence edges
    change.save(update_fields=["operation"])
    last = undo.last_merge()
    assert last is not None and "kept in lists" in last.refusal
    with pytest.raises(CurationError, match="kept in lists"):
        entity_unmerge(driver=empty_graph, seq=merged.seq, actor="curator:bo")
    assert "d" not in entity_ids(empty_graph).values()
