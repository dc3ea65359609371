"""The shared vector store: writes of vectors and reads of the ordered feed of changes.

Every change (a batch added, a batch removed) takes the next sequence number of its space: the
writer first increments the space's ``VectorFeed.seq`` (an ``UPDATE`` that locks the row, on
PostgreSQL and SQLite alike), then writes its rows with that number, then commits. Writers of one
space thus commit in sequence order, so a reader that has applied everything up to ``seq`` and
reads the rows above it misses nothing. Readers fetch the head first and then the rows up to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import F

from apps.vectors.errors import IndexMismatch
from apps.vectors.models import StoredVector, VectorFeed, new_epoch
from apps.vectors.types import Ids, SpaceConfig, VectorItem, Vectors

FETCH_ROWS = 2000
WRITE_ROWS = 2000
IN_CHUNK = 5000


@dataclass(frozen=True)
class Head:
    """Where a space's feed stands."""

    seq: int
    epoch: str
    model: str
    dim: int
    pruned: int


@dataclass(frozen=True)
class Batch:
    """Rows of the feed, in the order read: the vectors to (re)place and the ids removed."""

    items: list[VectorItem]
    ids: Ids
    vectors: Vectors
    removed: Ids


def _feed(space: str) -> VectorFeed:
    """The space's feed row, created when it is the first change (by whichever writer gets there)."""
    VectorFeed.objects.bulk_create([VectorFeed(space=space)], ignore_conflicts=True)
    return VectorFeed.objects.get(space=space)


def store_head(space: str) -> Head:
    feed = VectorFeed.objects.filter(space=space).first()
    if feed is None:
        return Head(0, "", "", 0, 0)
    return Head(feed.seq, feed.epoch, feed.model, feed.dim, feed.pruned)


def _next_seq(config: SpaceConfig) -> int:
    """Take the space's next sequence number (inside the writer's transaction: holds the row lock)."""
    # the UPDATE comes first: it takes the row lock (PostgreSQL) or the write lock (SQLite) before
    # anything is read, so no writer acts on a head another one is about to move
    if not VectorFeed.objects.filter(space=config.space).update(seq=F("seq") + 1):
        _feed(config.space)
        VectorFeed.objects.filter(space=config.space).update(seq=F("seq") + 1)
    feed = VectorFeed.objects.get(space=config.space)
    if not feed.model:
        VectorFeed.objects.filter(space=config.space).update(model=config.model, dim=config.dim)
    elif (feed.model, feed.dim) != (config.model, config.dim):
        raise IndexMismatch(
            f"the stored {config.space} vectors are {feed.model} ({feed.dim}-d), settings ask for "
            f"{config.model} ({config.dim}-d): run `manage.py vectors rebuild --space {config.space}`"
        )
    return feed.seq


def store_add(config: SpaceConfig, ids: Ids, items: Sequence[VectorItem], vectors: Vectors) -> int:
    """Write (or replace) these vectors as one change; return its sequence number.

    Written ``WRITE_ROWS`` rows at a time, each row's bytes taken from ``vectors`` as it is written:
    at 200,000 vectors, making every row first held a second copy of the vectors and 200,000 objects.
    """
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    id_list = ids.tolist()
    with transaction.atomic():
        seq = _next_seq(config)
        for start in range(0, len(id_list), WRITE_ROWS):
            stop = start + WRITE_ROWS
            StoredVector.objects.bulk_create(
                [
                    StoredVector(
                        space=config.space,
                        vid=vid,
                        node_id=item.node_id,
                        label=item.label,
                        collection=item.collection,
                        vector=row.tobytes(),
                        seq=seq,
                        removed=False,
                    )
                    for vid, item, row in zip(id_list[start:stop], items[start:stop], rows[start:stop], strict=True)
                ],
                update_conflicts=True,
                unique_fields=["space", "vid"],
                update_fields=["node_id", "label", "collection", "vector", "seq", "removed"],
            )
    return seq


def _chunks(ids: Ids) -> Iterator[list[int]]:
    """The ids in lists short enough for one ``IN (...)`` (SQLite allows 32766 parameters)."""
    values = [int(vid) for vid in ids.tolist()]
    for start in range(0, len(values), IN_CHUNK):
        yield values[start : start + IN_CHUNK]


def store_known(space: str, ids: Ids) -> dict[int, str]:
    """The node id stored under each of these live vector ids."""
    known: dict[int, str] = {}
    for chunk in _chunks(ids):
        rows = StoredVector.objects.filter(space=space, vid__in=chunk, removed=False).values_list("vid", "node_id")
        known.update(rows)
    return known


def store_remove(config: SpaceConfig, ids: Ids) -> int:
    """Mark these vector ids removed as one change; return how many stored vectors that removed."""
    chunks = list(_chunks(ids))
    live = [StoredVector.objects.filter(space=config.space, vid__in=chunk, removed=False) for chunk in chunks]
    if not any(rows.exists() for rows in live):
        return 0
    with transaction.atomic():
        seq = _next_seq(config)
        return sum(rows.update(removed=True, vector=b"", seq=seq) for rows in live)


def store_changes(space: str, *, after: int, upto: int, live_only: bool = False) -> Iterator[Batch]:
    """The rows written by changes ``after < seq <= upto``, in batches (each row as it is now).

    Read in (seq, id) order, a page at a time from where the last one stopped, along the
    (space, seq, id) index: every page is a range of that index, never a sort of the whole feed
    (at 1M rows ordering by id alone sorted the feed again for every page: minutes instead of seconds).
    """
    rows = StoredVector.objects.filter(space=space)
    if live_only:
        rows = rows.filter(removed=False)
    fields = ("seq", "id", "vid", "node_id", "label", "collection", "vector", "removed")
    seq, last_id = after, None
    while True:
        chunk: list[tuple[Any, ...]] = []
        if last_id is not None:  # the rest of the change the last page stopped in (no other bound on seq:
            # SQLite would take it for the index range and sort the change's rows again)
            rest = rows.filter(seq=seq, id__gt=last_id).order_by("id")
            chunk = list(rest.values_list(*fields)[:FETCH_ROWS])
        if len(chunk) < FETCH_ROWS:
            later = rows.filter(seq__gt=seq, seq__lte=upto).order_by("seq", "id")
            chunk += list(later.values_list(*fields)[: FETCH_ROWS - len(chunk)])
        if not chunk:
            return
        seq, last_id = chunk[-1][0], chunk[-1][1]
        live = [row for row in chunk if not row[7]]
        yield Batch(
            items=[VectorItem(node, label, collection) for *_, node, label, collection, _, _ in live],
            ids=np.array([row[2] for row in live], dtype=np.int64),
            vectors=_rows([bytes(row[6]) for row in live]),
            removed=np.array([row[2] for row in chunk if row[7]], dtype=np.int64),
        )


def _rows(blobs: list[bytes]) -> Vectors:
    if not blobs:
        return np.empty((0, 0), np.float32)
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)


def store_ids(space: str, collections: set[str] | None = None, *, upto: int | None = None) -> dict[int, str]:
    """The live vector ids of the space (only of ``collections`` if given, only as written by changes
    up to ``upto`` if given), each with its node id."""
    rows = StoredVector.objects.filter(space=space, removed=False)
    if upto is not None:
        rows = rows.filter(seq__lte=upto)
    if collections is not None:
        rows = rows.filter(collection__in=sorted(collections))
    return dict(rows.values_list("vid", "node_id").iterator(chunk_size=FETCH_ROWS))


def store_changed_after(space: str, seq: int) -> set[int]:
    """The vector ids that changes after ``seq`` wrote (added, replaced or removed)."""
    return set(StoredVector.objects.filter(space=space, seq__gt=seq).values_list("vid", flat=True))


def store_clear(config: SpaceConfig) -> None:
    """Drop every stored vector of the space; a new epoch, made with the configured model."""
    with transaction.atomic():
        feed = _feed(config.space)
        StoredVector.objects.filter(space=config.space).delete()
        feed.epoch, feed.model, feed.dim, feed.pruned = new_epoch(), config.model, config.dim, feed.seq
        feed.save(update_fields=["epoch", "model", "dim", "pruned"])


def store_count(space: str) -> int:
    return StoredVector.objects.filter(space=space, removed=False).count()


def store_renew() -> None:
    """Give every space a new epoch, so every reader builds its copy again from the rows (after a
    restore of the database, whose rows no local snapshot can be trusted to match)."""
    for feed in VectorFeed.objects.all():
        VectorFeed.objects.filter(space=feed.space).update(epoch=new_epoch())


def store_prune(space: str, *, below: int) -> int:
    """Drop the tombstones of changes at or below ``below``; a copy behind that point builds itself again
    from the rows (it could no longer learn of those removals)."""
    with transaction.atomic():
        if not VectorFeed.objects.filter(space=space).update(seq=F("seq")):  # the feed's row lock, as a writer
            return 0
        upto = min(below, VectorFeed.objects.get(space=space).seq)
        VectorFeed.objects.filter(space=space, pruned__lt=upto).update(pruned=upto)
        dropped, _ = StoredVector.objects.filter(space=space, removed=True, seq__lte=upto).delete()
    return dropped
