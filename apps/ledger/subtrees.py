"""The change log's tree from stored perfect subtrees, so a tree head or a proof reads O(log n) rows.

Every node of an RFC 9162 tree of any size covers a range ``[start, end)`` whose ``start`` is a
multiple of a power of two at least ``end - start``; such a range splits, from the left, into
perfect subtrees of decreasing size, each aligned to its size (the binary digits of the range's
length), and its hash is the right fold of theirs with ``node_hash``. A perfect subtree of
``2**level`` leaves starting at leaf ``index * 2**level`` is stored as ``MerkleNode(level, index)``
for levels >= 1 (level 0 is the entries' own ``leaf_hash``), written by ``entries_append`` in the
transaction of the entries that complete it. The rows are a cache: ``ledger verify`` recomputes
the tree from the entries' fields and reports any stored subtree that disagrees.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import reduce

from django.db import transaction
from django.db.models import F, Q

from apps.ledger import merkle
from apps.ledger.models import ChangeEntry, LedgerHead, MerkleNode

Range = tuple[int, int]  # leaves [start, end)
Key = tuple[int, int]  # (level, index): leaves [index << level, (index + 1) << level)


def _split(size: int) -> int:
    return 1 << ((size - 1).bit_length() - 1)


def pieces(start: int, end: int) -> list[Key]:
    """The aligned perfect subtrees that make up an RFC tree node's range, left to right."""
    keys = []
    while start < end:
        level = (end - start).bit_length() - 1
        if start % (1 << level):
            raise ValueError(f"[{start}, {end}) is not a node of a Merkle tree")
        keys.append((level, start >> level))
        start += 1 << level
    return keys


def fold(hashes: Sequence[bytes]) -> bytes:
    """The hash of a range from its pieces' hashes (left to right)."""
    return reduce(lambda right, left: merkle.node_hash(left, right), reversed(hashes[:-1]), hashes[-1])


def inclusion_ranges(index: int, start: int, end: int) -> list[Range]:
    """The ranges whose hashes are PATH(index, D[start:end]) (``merkle.inclusion_proof``), in order."""
    if end - start == 1:
        return []
    middle = start + _split(end - start)
    if index < middle:
        return [*inclusion_ranges(index, start, middle), (middle, end)]
    return [*inclusion_ranges(index, middle, end), (start, middle)]


def consistency_ranges(old_size: int, start: int, end: int, complete: bool = True) -> list[Range]:
    """The ranges whose hashes are SUBPROOF(old_size, D[start:end], complete) (``merkle.consistency_proof``)."""
    if old_size == end - start:
        return [] if complete else [(start, end)]
    k = _split(end - start)
    if old_size <= k:
        return [*consistency_ranges(old_size, start, start + k, complete), (start + k, end)]
    return [*consistency_ranges(old_size - k, start + k, end, False), (start, start + k)]


def _stored(keys: Iterable[Key]) -> dict[Key, bytes]:
    """The stored hashes of these subtrees (level 0: the entries' leaf hashes); missing ones are left out."""
    keys = set(keys)
    seqs = [index for level, index in keys if level == 0]
    found = {
        (0, seq): bytes.fromhex(leaf)
        for seq, leaf in ChangeEntry.objects.filter(seq__in=seqs).values_list("seq", "leaf_hash")
    }
    nodes = [Q(level=level, index=index) for level, index in keys if level > 0]
    if nodes:
        rows = MerkleNode.objects.filter(reduce(lambda a, b: a | b, nodes)).values_list("level", "index", "hash")
        found.update({(level, index): bytes.fromhex(value) for level, index, value in rows})
    return found


def range_hashes(ranges: Sequence[Range]) -> list[bytes] | None:
    """The hash of each range (an RFC tree node) from the stored subtrees, or None when one is missing."""
    split = [pieces(start, end) for start, end in ranges]
    stored = _stored(key for keys in split for key in keys)
    if any(key not in stored for keys in split for key in keys):
        return None
    return [fold([stored[key] for key in keys]) for keys in split]


def completed(first: int, leaves: Sequence[bytes]) -> dict[Key, bytes]:
    """The subtrees (level >= 1) that appending ``leaves`` at ``first`` completes, with their hashes.
    Reads the at most one earlier subtree per level that a new one starts with."""
    end = first + len(leaves)
    known: dict[Key, bytes] = {(0, first + offset): leaf for offset, leaf in enumerate(leaves)}
    earlier = []
    level = 1
    while (1 << level) <= end:
        low = first >> level  # the first subtree of this level the new leaves complete or extend
        if ((low + 1) << level) <= end and ((2 * low + 1) << (level - 1)) <= first:
            earlier.append((level - 1, 2 * low))  # its left half was complete before
        level += 1
    known.update(_stored(earlier))
    new: dict[Key, bytes] = {}
    level = 1
    while (1 << level) <= end:
        for index in range(first >> level, end >> level):
            left, right = known.get((level - 1, 2 * index)), known.get((level - 1, 2 * index + 1))
            if left is not None and right is not None:  # else an earlier one is missing: verify says so
                known[(level, index)] = new[(level, index)] = merkle.node_hash(left, right)
        level += 1
    return new


def nodes_append(first: int, leaves: Sequence[bytes]) -> None:
    """Store the subtrees that the leaves appended at ``first`` complete (in the appenders' transaction).
    A log that starts again at entry 0 (an emptied database) has no earlier subtrees."""
    if first == 0:
        MerkleNode.objects.all().delete()
    MerkleNode.objects.bulk_create(
        [
            MerkleNode(level=level, index=index, hash=value.hex())
            for (level, index), value in completed(first, leaves).items()
        ],
        update_conflicts=True,
        unique_fields=["level", "index"],
        update_fields=["hash"],
    )


def nodes_rebuild() -> int:
    """Store the subtrees again from the entries' stored leaf hashes; returns how many there are.
    Holds the appenders' lock (the ``LedgerHead`` row) so no entry is appended meanwhile."""
    with transaction.atomic():
        LedgerHead.objects.filter(pk=1).update(next_seq=F("next_seq"))
        rows = ChangeEntry.objects.order_by("seq").values_list("leaf_hash", flat=True)
        nodes = all_nodes([bytes.fromhex(value) for value in rows])
        MerkleNode.objects.all().delete()
        MerkleNode.objects.bulk_create(
            [MerkleNode(level=level, index=index, hash=value.hex()) for (level, index), value in nodes.items()],
            batch_size=2000,
        )
    return len(nodes)


def all_nodes(leaves: Sequence[bytes]) -> dict[Key, bytes]:
    """Every perfect subtree (level >= 1) of these leaves, computed from them."""
    nodes: dict[Key, bytes] = {}
    level, row = 0, list(leaves)
    while len(row) > 1:
        row = [merkle.node_hash(row[i], row[i + 1]) for i in range(0, len(row) - 1, 2)]
        level += 1
        nodes.update({(level, index): value for index, value in enumerate(row)})
    return nodes
