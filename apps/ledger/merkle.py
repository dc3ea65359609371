"""The Merkle tree of the change log, as RFC 9162 (Certificate Transparency 2.0, section 2.1) defines it.

Leaves are the entries' canonical bytes. ``leaf_hash(d) = SHA-256(0x00 || d)`` and
``node_hash(l, r) = SHA-256(0x01 || l || r)``; the root of ``n`` leaves splits them at the
largest power of two below ``n``. The functions work on the list of leaf hashes, so a caller
keeps those (one per entry) and never needs the entries to build a proof. Verification follows
the RFC's iterative algorithms and needs nothing but hashlib: a standalone verifier can copy it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def _split(size: int) -> int:
    """The largest power of two smaller than ``size`` (size >= 2)."""
    return 1 << ((size - 1).bit_length() - 1)


def root(leaves: Sequence[bytes]) -> bytes:
    """MTH of the leaves whose hashes are given; the empty tree's root is SHA-256 of nothing."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    level = list(leaves)
    while len(level) > 1:  # pairing left to right gives the same tree as the recursive split
        paired = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        level = paired + ([level[-1]] if len(level) % 2 else [])
    return level[0]


def inclusion_proof(index: int, leaves: Sequence[bytes]) -> list[bytes]:
    """PATH(index, D[n]): the audit path of leaf ``index`` in the tree of ``leaves``."""
    if not 0 <= index < len(leaves):
        raise ValueError(f"leaf {index} is not in a tree of {len(leaves)}")
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if index < k:
        return [*inclusion_proof(index, leaves[:k]), root(leaves[k:])]
    return [*inclusion_proof(index - k, leaves[k:]), root(leaves[:k])]


def _subproof(size: int, leaves: Sequence[bytes], complete: bool) -> list[bytes]:
    if size == len(leaves):
        return [] if complete else [root(leaves)]
    k = _split(len(leaves))
    if size <= k:
        return [*_subproof(size, leaves[:k], complete), root(leaves[k:])]
    return [*_subproof(size - k, leaves[k:], False), root(leaves[:k])]


def consistency_proof(old_size: int, leaves: Sequence[bytes]) -> list[bytes]:
    """PROOF(old_size, D[n]): that the tree of the first ``old_size`` leaves is a prefix of this one."""
    if not 0 <= old_size <= len(leaves):
        raise ValueError(f"size {old_size} is not within a tree of {len(leaves)}")
    if old_size in (0, len(leaves)):
        return []
    return _subproof(old_size, leaves, True)


def verify_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes], expected_root: bytes) -> bool:
    """RFC 9162 2.1.3.2: whether ``leaf`` (a leaf hash) is at ``index`` in the tree of ``size``
    whose root is ``expected_root``."""
    if not 0 <= index < size:
        return False
    fn, sn, result = index, size - 1, leaf
    for sibling in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            result = node_hash(sibling, result)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            result = node_hash(result, sibling)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and result == expected_root


def verify_consistency(old_size: int, new_size: int, proof: Sequence[bytes], old_root: bytes, new_root: bytes) -> bool:
    """RFC 9162 2.1.4.2: whether the tree of ``new_size`` with ``new_root`` extends the one of ``old_size``."""
    if not 0 <= old_size <= new_size:
        return False
    if old_size == new_size:
        return not proof and old_root == new_root
    if old_size == 0:
        return not proof
    if not proof:
        return False
    path = list(proof)
    if old_size & (old_size - 1) == 0:  # a power of two: the old root is itself a node of the new tree
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    old_result = new_result = path[0]
    for node in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            old_result = node_hash(node, old_result)
            new_result = node_hash(node, new_result)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            new_result = node_hash(new_result, node)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and old_result == old_root and new_result == new_root
