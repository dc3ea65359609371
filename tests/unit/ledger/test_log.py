"""The change log in the database: one appender, dense sequence numbers, snapshots, and a
database that refuses to change or remove what was logged; ``log_verify`` names what was."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from apps.ledger import merkle
from apps.ledger.canonical import entry_bytes
from apps.ledger.content import content_hash, entity_content
from apps.ledger.maintenance import maintenance
from apps.ledger.models import ChangeEntry, GraphChange, Snapshot
from apps.ledger.services import (
    Change,
    LedgerError,
    consistency_path,
    entries_append,
    inclusion_path,
    snapshot,
    subjects_latest,
    tree_head,
)
from apps.ledger.verify import log_verify

pytestmark = pytest.mark.django_db


def rename(entity: str, old: str, new: str) -> Change:
    return Change(
        "entity.renamed",
        "Entity",
        entity,
        entity_content(entity_id=entity, name=old, type_="PERSON"),
        entity_content(entity_id=entity, name=new, type_="PERSON"),
        operation={"cypher": "ENTITY_RENAME", "params": {"id": entity, "name": new}},
    )


def append(count: int, actor: str = "curator:ana") -> list[ChangeEntry]:
    with transaction.atomic():
        return entries_append(actor=actor, changes=[rename(f"e{i}", f"Old {i}", f"New {i}") for i in range(count)])


def test_entries_get_dense_numbers_their_leaf_hash_and_snapshots() -> None:
    first = append(3)
    second = append(2, actor="curator:bo")
    assert [row.seq for row in first + second] == [0, 1, 2, 3, 4]
    row = ChangeEntry.objects.get(seq=4)
    assert row.actor == "curator:bo" and row.action == "entity.renamed" and row.subject_id == "e1"
    assert row.leaf_hash == merkle.leaf_hash(entry_bytes(row.entry())).hex()
    after = snapshot(row.after)
    assert after is not None and after["name"] == "New 1" and content_hash(after) == row.after
    assert GraphChange.objects.filter(entry=row, applied_at__isnull=True).exists()
    assert subjects_latest(kind="Entity", subject_ids=["e1", "missing"]) == {"e1": row.after}


@pytest.mark.django_db(transaction=True)  # no test transaction around it, and the log is emptied after
def test_an_entry_is_only_appended_inside_the_transaction_of_its_change() -> None:
    with pytest.raises(LedgerError, match="inside the transaction"):
        entries_append(actor="x", changes=[rename("e", "a", "b")])
    with pytest.raises(LedgerError, match="unknown change-log action"), transaction.atomic():
        entries_append(actor="x", changes=[Change("entity.teleported", "Entity", "e", None, None)])
    assert ChangeEntry.objects.count() == 0


def test_a_rolled_back_change_leaves_no_entry_and_no_gap() -> None:
    append(1)
    with pytest.raises(RuntimeError), transaction.atomic():
        entries_append(actor="x", changes=[rename("e", "a", "b")])
        raise RuntimeError("the change itself failed")
    assert [row.seq for row in append(1)] == [1]


def test_the_tree_head_and_proofs_come_from_the_entries() -> None:
    rows = append(6)
    leaves = [bytes.fromhex(row.leaf_hash) for row in rows]
    head = tree_head()
    assert head.size == 6 and head.root == merkle.root(leaves).hex()
    path = [bytes.fromhex(node) for node in inclusion_path(seq=4, size=6)]
    assert merkle.verify_inclusion(leaves[4], 4, 6, path, bytes.fromhex(head.root))
    old = bytes.fromhex(tree_head(3).root)
    proof = [bytes.fromhex(node) for node in consistency_path(old_size=3, new_size=6)]
    assert merkle.verify_consistency(3, 6, proof, old, bytes.fromhex(head.root))
    with pytest.raises(LedgerError):
        tree_head(7)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE ledger_changeentry SET actor = 'mallory' WHERE seq = 1",
        "DELETE FROM ledger_changeentry WHERE seq = 1",
        "UPDATE ledger_snapshot SET content = '{}'",
        "DELETE FROM ledger_snapshot",
    ],
)
def test_the_database_refuses_to_change_or_remove_logged_rows(statement: str) -> None:
    append(2)
    with (
        maintenance(False),
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(statement)
    assert ChangeEntry.objects.get(seq=1).actor == "curator:ana"
    with maintenance(False), pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        ChangeEntry.objects.filter(seq=0).update(actor="mallory")
    assert set(ChangeEntry.objects.values_list("actor", flat=True)) == {"curator:ana"}


def test_verify_passes_on_an_honest_log_and_names_an_edited_entry() -> None:
    append(5)
    honest = log_verify(chain=None)
    assert honest.ok and honest.entries == 5
    with connection.cursor() as cursor:  # an attacker with database access (maintenance: the trigger is off)
        cursor.execute("UPDATE ledger_changeentry SET actor = 'mallory' WHERE seq = 3")
    report = log_verify(chain=None)
    assert not report.ok
    assert report.problems[0].seq == 3 and "entry #3" in report.problems[0].message


def test_verify_names_a_deleted_entry() -> None:
    append(5)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM ledger_graphchange WHERE entry_id = 2")
        cursor.execute("DELETE FROM ledger_changeentry WHERE seq = 2")
    report = log_verify(chain=None)
    assert report.problems[0].seq == 2 and "#2 is missing" in report.problems[0].message


def test_verify_notices_a_changed_snapshot() -> None:
    [row] = append(1)
    Snapshot.objects.filter(sha256=row.after).update(content={"kind": "Entity", "name": "forged"})
    report = log_verify(chain=None)
    assert [problem.kind for problem in report.problems] == ["snapshot"]


def test_verify_names_an_entry_whose_action_was_forged() -> None:
    append(3)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE ledger_changeentry SET action = 'entity.vanished' WHERE seq = 1")
    report = log_verify(chain=None)
    assert report.problems[0].seq == 1 and "no canonical form" in report.problems[0].message
