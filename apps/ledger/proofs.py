"""Proof bundles: everything an auditor needs to check one entry against the chain, without ragkg.

The format (``ragkg-ledger-proof/1``) is specified in docs/ledger.md and checked by
``tools/verify_proof.py``, which imports nothing of ragkg.
"""

from __future__ import annotations

import base64
from typing import Any

from apps.ledger import merkle
from apps.ledger.canonical import CanonicalError, entry_bytes
from apps.ledger.models import Anchor, ChangeEntry
from apps.ledger.services import LedgerError, inclusion_path, tree_head

FORMAT = "ragkg-ledger-proof/1"


def covering_anchor(seq: int) -> Anchor | None:
    """The earliest confirmed anchor whose tree holds entry ``seq``."""
    return Anchor.objects.filter(state=Anchor.CONFIRMED, tree_size__gt=seq).order_by("tree_size", "created_at").first()


def proof_bundle(seq: int) -> dict[str, Any]:
    row = ChangeEntry.objects.filter(seq=seq).first()
    if row is None:
        raise LedgerError(f"there is no change-log entry #{seq}")
    anchor = covering_anchor(seq)
    if anchor is None:
        raise LedgerError(
            f"entry #{seq} is not anchored yet; the next anchoring round (`manage.py ledger anchor`) covers it"
        )
    size = anchor.tree_size
    try:
        data = entry_bytes(row.entry())
    except CanonicalError as exc:
        raise LedgerError(f"entry #{seq} was changed ({exc}); run `manage.py ledger verify`") from exc
    leaf = merkle.leaf_hash(data)
    try:
        head = tree_head(size)
        path = inclusion_path(seq=seq, size=size)
    except LedgerError:
        head, path = None, []
    nodes = [bytes.fromhex(node) for node in path]
    if (
        head is None
        or row.leaf_hash != leaf.hex()
        or head.root != anchor.root
        or not merkle.verify_inclusion(leaf, seq, size, nodes, bytes.fromhex(anchor.root))
    ):
        raise LedgerError("the change log no longer gives the anchored root; run `manage.py ledger verify`")
    return {
        "format": FORMAT,
        "entry": base64.b64encode(data).decode("ascii"),
        "leaf_index": seq,
        "leaf_hash": leaf.hex(),
        "tree_size": anchor.tree_size,
        "inclusion_path": path,
        "root": anchor.root,
        "anchor": {
            "chain_id": anchor.chain_id,
            "contract": anchor.contract,
            "tx_hash": anchor.tx_hash,
            "block_number": anchor.block_number,
            "block_hash": anchor.block_hash,
        },
    }
