"""The change log: the one function that appends to it, its tree heads and proofs.

``entries_append`` is the only writer of ``ChangeEntry`` rows. It must run inside the
database transaction of the change it records, so the change and its entry commit together
or not at all. Sequence numbers come from the ``LedgerHead`` row, which every appender
updates first: that serialises appenders (a row lock on PostgreSQL, the write lock on SQLite),
so numbers are dense and commit in order.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import transaction
from django.db.models import F, Max

from apps.ledger import merkle, subtrees
from apps.ledger.canonical import ACTIONS, Entry, entry_bytes
from apps.ledger.content import Content, content_hash
from apps.ledger.models import ChangeEntry, GraphChange, LedgerHead, Snapshot

logger = logging.getLogger(__name__)


class LedgerError(Exception):
    """The change log cannot do what was asked (for users: the message says why)."""


@dataclass(frozen=True)
class Change:
    """One change to record: what happened to which subject, its content before and after
    (None: it did not exist, or no longer exists), and the graph write that follows, if any."""

    action: str
    subject_kind: str
    subject_id: str
    before: Content | str | None  # a content, or the hash of one already logged
    after: Content | None
    ref: str = ""
    operation: dict[str, Any] | None = field(default=None)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _allocate(count: int) -> int:
    """Reserve ``count`` sequence numbers; return the first."""
    if LedgerHead.objects.filter(pk=1).update(next_seq=F("next_seq") + count):
        return LedgerHead.objects.values_list("next_seq", flat=True).get(pk=1) - count
    # No head row (a fresh or emptied database): start after the last entry there is.
    last = ChangeEntry.objects.aggregate(last=Max("seq"))["last"]
    first = 0 if last is None else last + 1
    LedgerHead.objects.create(pk=1, next_seq=first + count)
    return first


def entries_append(*, actor: str, changes: Sequence[Change]) -> list[ChangeEntry]:
    """Append one entry per change, in order, inside the caller's transaction."""
    if not changes:
        return []
    if not transaction.get_connection().in_atomic_block:
        raise LedgerError("change-log entries are appended inside the transaction of the change they record")
    for change in changes:
        if change.action not in ACTIONS:
            raise LedgerError(f"unknown change-log action {change.action!r}")
    first = _allocate(len(changes))
    time = _now()
    snapshots: dict[str, Content] = {}
    rows: list[ChangeEntry] = []
    for offset, change in enumerate(changes):
        hashes = []
        for content in (change.before, change.after):
            if content is None or isinstance(content, str):
                hashes.append(content)
                continue
            digest = content_hash(content)
            snapshots[digest] = content
            hashes.append(digest)
        entry = Entry(
            seq=first + offset,
            time=time,
            actor=actor[:200],
            action=change.action,
            subject_kind=change.subject_kind,
            subject_id=change.subject_id,
            before=hashes[0],
            after=hashes[1],
        )
        rows.append(
            ChangeEntry(
                seq=entry.seq,
                time=entry.time,
                actor=entry.actor,
                action=entry.action,
                subject_kind=entry.subject_kind,
                subject_id=entry.subject_id,
                before=entry.before,
                after=entry.after,
                leaf_hash=merkle.leaf_hash(entry_bytes(entry)).hex(),
                ref=change.ref,
            )
        )
    Snapshot.objects.bulk_create(
        [Snapshot(sha256=digest, content=content) for digest, content in snapshots.items()], ignore_conflicts=True
    )
    ChangeEntry.objects.bulk_create(rows)
    subtrees.nodes_append(first, [bytes.fromhex(row.leaf_hash) for row in rows])
    GraphChange.objects.bulk_create(
        [
            GraphChange(entry=row, operation=change.operation)
            for row, change in zip(rows, changes, strict=True)
            if change.operation is not None
        ]
    )
    return rows


def subjects_latest(*, kind: str, subject_ids: Sequence[str]) -> dict[str, str | None]:
    """The ``after`` hash of the latest entry of each of these subjects that has one."""
    latest: dict[str, str | None] = {}
    rows = (
        ChangeEntry.objects.filter(subject_kind=kind, subject_id__in=list(subject_ids))
        .order_by("seq")
        .values_list("subject_id", "after")
    )
    for subject_id, after in rows:
        latest[subject_id] = after
    return latest


def knowledge_stand(*, document_ids: Sequence[str]) -> dict[str, Any]:
    """What an answer stands on: the log's size now and, per source document, the entry that
    put that version in the knowledge base (its sequence number and leaf hash)."""
    rows = (
        ChangeEntry.objects.filter(ref__in=set(document_ids), action__in=("document.ingested", "document.updated"))
        .order_by("seq")
        .values_list("ref", "seq", "leaf_hash")
    )
    sources = {ref: {"seq": seq, "leaf_hash": leaf} for ref, seq, leaf in rows}
    return {"tree_size": tree_size(), "sources": sources}


# --- the tree ------------------------------------------------------------------------------


def tree_size() -> int:
    return ChangeEntry.objects.count()


def leaf_hashes(size: int | None = None) -> list[bytes]:
    """The leaf hashes of the first ``size`` entries (all by default), as stored."""
    rows = ChangeEntry.objects.order_by("seq").values_list("leaf_hash", flat=True)
    if size is not None:
        rows = rows[:size]
    return [bytes.fromhex(value) for value in rows]


@dataclass(frozen=True)
class TreeHead:
    size: int
    root: str  # hex


def _hashes(ranges: Sequence[tuple[int, int]], size: int) -> list[bytes]:
    """The hash of each node range of the tree of ``size``: from the stored subtrees (O(log n) rows),
    or from all leaf hashes when the store lacks one (it never should; ``ledger verify`` says)."""
    found = subtrees.range_hashes(ranges)
    if found is not None:
        return found
    logger.warning("the change log's stored subtrees are incomplete; hashing the leaves (run `ledger verify`)")
    leaves = leaf_hashes(size)
    return [merkle.root(leaves[start:end]) for start, end in ranges]


def tree_head(size: int | None = None) -> TreeHead:
    total = tree_size()
    if size is not None and total < size:
        raise LedgerError(f"the change log has {total} entries, not {size}")
    size = total if size is None else size
    if size <= 0:
        return TreeHead(len(leaf_hashes(size)), merkle.root([]).hex())
    return TreeHead(size, _hashes([(0, size)], size)[0].hex())


def inclusion_path(*, seq: int, size: int) -> list[str]:
    size = min(size, tree_size())
    if not 0 <= seq < size:
        raise LedgerError(f"entry {seq} is not within a tree of {max(size, 0)} entries")
    return [node.hex() for node in _hashes(subtrees.inclusion_ranges(seq, 0, size), size)]


def consistency_path(*, old_size: int, new_size: int) -> list[str]:
    total = tree_size()
    if total < new_size:
        raise LedgerError(f"the change log has {total} entries, not {new_size}")
    if not 0 <= old_size <= new_size:
        raise ValueError(f"size {old_size} is not within a tree of {max(new_size, 0)}")
    if old_size in (0, new_size):
        return []
    return [node.hex() for node in _hashes(subtrees.consistency_ranges(old_size, 0, new_size), new_size)]


def snapshot(digest: str | None) -> Content | None:
    if digest is None:
        return None
    row = Snapshot.objects.filter(sha256=digest).first()
    return None if row is None else dict(row.content)
