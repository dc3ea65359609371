"""Tree heads and proofs from stored perfect subtrees: the same bytes as ``apps.ledger.merkle``
computes from all the leaves, for every size, read in O(log n) rows; ``ledger verify`` does not
trust the store and says when it disagrees."""

from __future__ import annotations

import hashlib
import importlib
import io
import random

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from apps.ledger import merkle, subtrees
from apps.ledger.models import ChangeEntry, MerkleNode
from apps.ledger.services import (
    Change,
    LedgerError,
    consistency_path,
    entries_append,
    inclusion_path,
    tree_head,
)
from apps.ledger.verify import log_verify

pytestmark = pytest.mark.django_db

LEAVES = [hashlib.sha256(str(i).encode()).digest() for i in range(70)]


def from_store(ranges: list[subtrees.Range], leaves: list[bytes]) -> list[bytes]:
    """The range hashes as the store gives them, with an in-memory store of these leaves."""
    store = {**{(0, i): leaf for i, leaf in enumerate(leaves)}, **subtrees.all_nodes(leaves)}
    return [subtrees.fold([store[key] for key in subtrees.pieces(start, end)]) for start, end in ranges]


def test_the_pieces_of_a_range_are_aligned_perfect_subtrees() -> None:
    assert subtrees.pieces(0, 13) == [(3, 0), (2, 2), (0, 12)]
    assert subtrees.pieces(8, 14) == [(2, 2), (1, 6)]
    with pytest.raises(ValueError, match="not a node"):
        subtrees.pieces(3, 7)


def test_roots_and_proofs_of_every_small_tree_match_the_rfc_functions() -> None:
    for size in range(1, len(LEAVES) + 1):
        leaves = LEAVES[:size]
        assert from_store([(0, size)], leaves) == [merkle.root(leaves)]
        for index in range(size):
            path = from_store(subtrees.inclusion_ranges(index, 0, size), leaves)
            assert path == merkle.inclusion_proof(index, leaves), (index, size)
        for old in range(1, size):
            proof = from_store(subtrees.consistency_ranges(old, 0, size), leaves)
            assert proof == merkle.consistency_proof(old, leaves), (old, size)


def test_appending_in_any_batches_completes_the_same_subtrees_as_all_the_leaves() -> None:
    rng = random.Random(7)
    stored: dict[subtrees.Key, bytes] = {}
    done = 0
    while done < len(LEAVES):
        count = min(rng.choice([1, 1, 2, 3, 5, 8, 13]), len(LEAVES) - done)
        earlier = {(0, i): leaf for i, leaf in enumerate(LEAVES[:done])} | stored
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(subtrees, "_stored", lambda keys, earlier=earlier: {key: earlier[key] for key in keys})
            new = subtrees.completed(done, LEAVES[done : done + count])
        assert not set(new) & set(stored)
        stored |= new
        done += count
        assert stored == subtrees.all_nodes(LEAVES[:done])


def rename(i: int) -> Change:
    return Change("entity.renamed", "Entity", f"e{i}", None, None)


def append_batches(total: int, seed: int = 3) -> list[bytes]:
    rng = random.Random(seed)
    done = 0
    while done < total:
        count = min(rng.choice([1, 2, 3, 7, 16]), total - done)
        with transaction.atomic():
            entries_append(actor="x", changes=[rename(done + i) for i in range(count)])
        done += count
    return [bytes.fromhex(value) for value in ChangeEntry.objects.order_by("seq").values_list("leaf_hash", flat=True)]


def test_heads_and_proofs_of_the_log_match_the_leaves_for_every_size() -> None:
    leaves = append_batches(67)
    stored = {(n.level, n.index): bytes.fromhex(n.hash) for n in MerkleNode.objects.all()}
    assert stored == subtrees.all_nodes(leaves)
    assert tree_head() == tree_head(67) and tree_head(0).root == merkle.root([]).hex()
    for size in range(1, 68):
        assert tree_head(size).root == merkle.root(leaves[:size]).hex()
        for seq in range(0, size, 5):
            assert inclusion_path(seq=seq, size=size) == [n.hex() for n in merkle.inclusion_proof(seq, leaves[:size])]
        for old in range(0, size + 1, 4):
            expected = merkle.consistency_proof(old, leaves[:size])
            assert consistency_path(old_size=old, new_size=size) == [n.hex() for n in expected]
    assert inclusion_path(seq=3, size=500) == [n.hex() for n in merkle.inclusion_proof(3, leaves)]
    with pytest.raises(LedgerError, match="not within a tree of 67"):
        inclusion_path(seq=67, size=90)
    with pytest.raises(LedgerError, match="has 67 entries, not 68"):
        consistency_path(old_size=1, new_size=68)
    with pytest.raises(ValueError, match="size 9 is not within a tree of 8"):
        consistency_path(old_size=9, new_size=8)


def test_a_head_and_a_proof_read_a_few_rows_not_the_log() -> None:
    append_batches(300)
    with CaptureQueriesContext(connection) as queries:
        head = tree_head()
        path = inclusion_path(seq=123, size=300)
    reads = [q["sql"] for q in queries.captured_queries]
    assert len(reads) <= 6  # a count and the stored subtrees (and leaves) each needs
    assert all("COUNT(" in sql or " IN (" in sql for sql in reads if "ledger_changeentry" in sql), reads
    leaves = [bytes.fromhex(v) for v in ChangeEntry.objects.order_by("seq").values_list("leaf_hash", flat=True)]
    assert merkle.verify_inclusion(leaves[123], 123, 300, [bytes.fromhex(n) for n in path], bytes.fromhex(head.root))


def test_verify_recomputes_and_names_a_wrong_or_missing_subtree_and_retree_repairs() -> None:
    leaves = append_batches(20)
    assert log_verify(chain=None).ok
    MerkleNode.objects.filter(level=2, index=1).update(hash="00" * 32)
    report = log_verify(chain=None)
    assert [p.kind for p in report.problems] == ["tree"]
    assert "1 stored subtree hash(es) disagree" in report.problems[0].message
    assert "entries #4 to #7" in report.problems[0].message
    assert report.root == merkle.root(leaves).hex()  # the verdict's root comes from the entries

    MerkleNode.objects.filter(level=3).delete()
    report = log_verify(chain=None)
    assert any(
        "2 stored subtree hash(es) are missing (the first over entries #0 to #7)" in p.message for p in report.problems
    )
    assert tree_head().root == merkle.root(leaves).hex()  # a missing subtree: the leaves are read instead

    out = io.StringIO()
    call_command("ledger", "retree", stdout=out)
    assert out.getvalue().strip() == "18 subtree hash(es) stored"
    assert log_verify(chain=None).ok and tree_head().root == merkle.root(leaves).hex()


def test_the_migration_fills_the_subtrees_of_a_log_logged_before_them() -> None:
    from django.apps import apps

    migration = importlib.import_module("apps.ledger.migrations.0003_merklenode")
    leaves = append_batches(37)
    MerkleNode.objects.all().delete()
    migration.fill(apps, None)
    assert {(n.level, n.index): bytes.fromhex(n.hash) for n in MerkleNode.objects.all()} == subtrees.all_nodes(leaves)
    assert log_verify(chain=None).ok
