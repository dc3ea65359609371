"""The changes made to a space since its last snapshot: ``journal.<version>.log``.

Saving the whole index after every ingested batch costs a copy of every vector each time (at 100k
vectors a few hundred MB per batch of 64). A change is appended here instead, as one record: a
header (magic, payload length, CRC-32 of the payload) and the payload (the removed vector ids, or
the added items and their vectors, as an ``.npz``), flushed and fsynced before the writer lets go
of the space's lock. Loading a space reads the snapshot and replays its journal in order; a
process that already has the snapshot replays only the records it has not seen.

A writer killed mid-append leaves a torn last record: its length or checksum does not match, so it
is not replayed, and the next writer cuts it off before appending. The registry folds the journal
into a new snapshot once it holds ``VECTORS_JOURNAL_FRACTION`` of the index's vectors (at least
``VECTORS_JOURNAL_MIN_VECTORS``), so replays stay short.
"""

from __future__ import annotations

import io
import os
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from apps.core.files import fsync_path
from apps.vectors.types import Ids, VectorItem, Vectors

MAGIC = b"RKJ1"
HEADER = struct.Struct("<4sII")  # magic, payload bytes, crc32 of the payload


@dataclass(frozen=True)
class Change:
    """One committed change: vector ids removed, then items added (with one row of ``vectors`` each)."""

    removed: Ids = field(default_factory=lambda: np.empty(0, np.int64))
    items: tuple[VectorItem, ...] = ()
    vectors: Vectors = field(default_factory=lambda: np.empty((0, 0), np.float32))

    @property
    def added(self) -> int:
        return len(self.items)


def journal_path(directory: Path, version: int) -> Path:
    return directory / f"journal.{version}.log"


def journal_size(path: Path) -> int:
    """The journal's size in bytes (0 when there is none): one ``stat``."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _encode(change: Change) -> bytes:
    buffer = io.BytesIO()
    np.savez(
        buffer,
        removed=np.asarray(change.removed, dtype=np.int64),
        node_ids=np.array([item.node_id for item in change.items], dtype=str),
        labels=np.array([item.label for item in change.items], dtype=str),
        collections=np.array([item.collection for item in change.items], dtype=str),
        vectors=np.asarray(change.vectors, dtype=np.float32),
    )
    return buffer.getvalue()


def _decode(payload: bytes) -> Change:
    with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
        items = tuple(
            VectorItem(str(node), str(label), str(collection))
            for node, label, collection in zip(npz["node_ids"], npz["labels"], npz["collections"], strict=True)
        )
        return Change(removed=npz["removed"].astype(np.int64), items=items, vectors=npz["vectors"])


def journal_append(path: Path, change: Change, *, valid_end: int) -> int:
    """Append ``change`` after the first ``valid_end`` bytes (anything after them is a torn record of a
    killed writer and is cut off), fsync it, and return the journal's new end."""
    payload = _encode(change)
    record = HEADER.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload
    created = not path.exists()
    with open(path, "ab" if created else "r+b") as handle:
        handle.truncate(valid_end)
        handle.seek(valid_end)
        handle.write(record)
        handle.flush()
        os.fsync(handle.fileno())
    if created:
        fsync_path(path.parent)
    return valid_end + len(record)


def journal_read(path: Path, offset: int = 0) -> tuple[list[Change], int]:
    """The complete records from byte ``offset`` on, and the end of the last of them (a torn or
    damaged record ends the journal)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except FileNotFoundError:
        return [], offset
    changes: list[Change] = []
    position = 0
    while position + HEADER.size <= len(data):
        magic, length, crc = HEADER.unpack_from(data, position)
        start, end = position + HEADER.size, position + HEADER.size + length
        if magic != MAGIC or end > len(data) or zlib.crc32(data[start:end]) != crc:
            break
        changes.append(_decode(data[start:end]))
        position = end
    return changes, offset + position
