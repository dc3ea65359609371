"""The change log's Merkle tree against the RFC 6962 test vectors (certificate-transparency's), and
every proof of every small tree checked both ways."""

from __future__ import annotations

import hashlib

import pytest

from apps.ledger.merkle import (
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    root,
    verify_consistency,
    verify_inclusion,
)

LEAVES = [
    b"",
    b"\x00",
    b"\x10",
    b"\x20\x21",
    b"\x30\x31",
    b"\x40\x41\x42\x43",
    b"\x50\x51\x52\x53\x54\x55\x56\x57",
    bytes(range(0x60, 0x70)),
]
ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
INCLUSION = {
    (0, 8): [
        "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
    (5, 8): [
        "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
    (0, 1): [],
}
CONSISTENCY = {
    (1, 1): [],
    (1, 8): [
        "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
    (6, 8): [
        "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
        "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
    (2, 5): [
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    ],
}
HASHES = [leaf_hash(leaf) for leaf in LEAVES]


def test_roots_match_the_rfc_6962_vectors() -> None:
    assert root([]) == hashlib.sha256(b"").digest()
    assert [root(HASHES[:n]).hex() for n in range(1, 9)] == ROOTS


@pytest.mark.parametrize(("index", "size"), sorted(INCLUSION))
def test_inclusion_proofs_match_the_vectors(index: int, size: int) -> None:
    proof = inclusion_proof(index, HASHES[:size])
    assert [node.hex() for node in proof] == INCLUSION[(index, size)]
    assert verify_inclusion(HASHES[index], index, size, proof, bytes.fromhex(ROOTS[size - 1]))


@pytest.mark.parametrize(("old", "new"), sorted(CONSISTENCY))
def test_consistency_proofs_match_the_vectors(old: int, new: int) -> None:
    proof = consistency_proof(old, HASHES[:new])
    assert [node.hex() for node in proof] == CONSISTENCY[(old, new)]
    assert verify_consistency(old, new, proof, root(HASHES[:old]), root(HASHES[:new]))


def test_every_proof_of_every_tree_up_to_33_leaves_verifies_and_a_wrong_one_does_not() -> None:
    leaves = [leaf_hash(str(i).encode()) for i in range(34)]
    for size in range(1, 34):
        tree = leaves[:size]
        top = root(tree)
        for index in range(size):
            proof = inclusion_proof(index, tree)
            assert verify_inclusion(tree[index], index, size, proof, top)
            assert not verify_inclusion(leaf_hash(b"other"), index, size, proof, top)
            assert not verify_inclusion(tree[index], index, size, proof, root(leaves[: size + 1]))
        for old in range(size + 1):
            proof = consistency_proof(old, tree)
            assert verify_consistency(old, size, proof, root(tree[:old]), top)
            if 0 < old < size:
                assert not verify_consistency(old, size, proof, root(tree[:old]), root(leaves[: size + 1]))
                assert not verify_consistency(old, size, proof, leaf_hash(b"forged"), top)


def test_out_of_range_requests_are_refused() -> None:
    with pytest.raises(ValueError, match="not in a tree"):
        inclusion_proof(3, HASHES[:3])
    with pytest.raises(ValueError, match="not within a tree"):
        consistency_proof(4, HASHES[:3])
    assert not verify_inclusion(HASHES[0], 5, 3, [], root(HASHES[:3]))
    assert not verify_consistency(4, 3, [], root(HASHES[:4]), root(HASHES[:3]))
