"""Each process's in-memory copy of every space, kept current by following the shared feed.

The source of truth is the relational database (apps/vectors/models.py, apps/vectors/store.py):
every vector, and an ordered feed of changes per space. A process that searches (a web server, a
GPU worker) builds its copy at first use from the host's local snapshot (``VECTORS_DIR``, when one
matches the feed's epoch) plus the feed's changes after it, or from the rows alone; then, on every
use at most ``VECTORS_SYNC_SECONDS`` after the last look, it reads the feed's head (one query) and
applies the changes above what it holds. A write made by this process is seen by its next search at
once. A copy that has applied ``VECTORS_SNAPSHOT_FRACTION`` of its vectors (at least
``VECTORS_SNAPSHOT_MIN_VECTORS``) since its snapshot saves a new one, so a restart replays little.
No file is shared between hosts. docs/vectors.md has the design and its failure cases.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import Error as DatabaseError

from apps.vectors.config import space_config
from apps.vectors.errors import IndexMismatch, StoreUnavailable, VectorIndexError
from apps.vectors.index import VectorIndex
from apps.vectors.locks import file_lock
from apps.vectors.store import Head, store_changes, store_head
from apps.vectors.types import SpaceConfig

logger = logging.getLogger(__name__)

SNAPSHOT_LOCK = ".snapshot.lock"


@dataclass
class _Copy:
    index: VectorIndex
    epoch: str
    seq: int  # every change of the feed up to this one is applied
    synced_at: float  # monotonic time of the last look at the feed's head that succeeded
    checked_at: float  # monotonic time of the last attempt
    since_snapshot: int = 0  # vectors added or removed since the local snapshot
    dirty: bool = False  # this process wrote since: look at once


@dataclass(frozen=True)
class SyncPolicy:
    """How often a copy looks at the feed, how long it may serve without reaching it, and when it
    saves a local snapshot (once its changes touch ``fraction`` of its vectors, at least ``min_vectors``)."""

    interval: float = 1.0
    stale_max: float = 30.0
    fraction: float = 0.05
    min_vectors: int = 2048

    def snapshot_due(self, changed: int, count: int) -> bool:
        return changed > 0 and changed >= max(self.min_vectors, self.fraction * count)


class VectorRegistry:
    def __init__(self, root: Path, config: Callable[[str], SpaceConfig], policy: SyncPolicy | None = None) -> None:
        self.root = root
        self._config = config
        self.policy = policy or SyncPolicy()
        self._copies: dict[str, _Copy] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def directory(self, space: str) -> Path:
        return self.root / space

    def _lock(self, space: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(space, threading.Lock())

    def get(self, space: str) -> VectorIndex:
        """The space's copy, brought up to the feed's head when it last looked more than the sync
        interval ago (or this process wrote since). While one thread applies changes, the others keep
        searching the copy as it is, unless this process's own write is not in it yet."""
        copy = self._copies.get(space)
        if copy is not None and not self._due(copy):
            return copy.index
        lock = self._lock(space)
        if not lock.acquire(blocking=copy is None or copy.dirty):
            assert copy is not None
            return copy.index
        try:
            copy = self._copies.get(space)
            if copy is not None and not self._due(copy):
                return copy.index
            return self._sync(space, copy).index
        finally:
            lock.release()

    def position(self, space: str) -> tuple[str, int] | None:
        """The epoch and sequence number this process's copy stands at (None: not loaded)."""
        copy = self._copies.get(space)
        return None if copy is None else (copy.epoch, copy.seq)

    def changed(self, space: str) -> None:
        """This process wrote to the space: its next use looks at the feed first."""
        copy = self._copies.get(space)
        if copy is not None:
            copy.dirty = True

    def reload(self, space: str) -> VectorIndex:
        """Drop the copy and build it again from the local snapshot and the feed."""
        with self._lock(space):
            self._copies.pop(space, None)
            return self._sync(space, None).index

    def _due(self, copy: _Copy) -> bool:
        return copy.dirty or time.monotonic() - copy.checked_at >= self.policy.interval

    def _sync(self, space: str, copy: _Copy | None) -> _Copy:
        now = time.monotonic()
        try:
            head = store_head(space)
        except DatabaseError as exc:
            return self._unreachable(space, copy, now, exc)
        config = self._config(space)
        if head.model and (head.model, head.dim) != (config.model, config.dim):
            raise IndexMismatch(
                f"the stored {space} vectors are {head.model} ({head.dim}-d), settings ask for {config.model} "
                f"({config.dim}-d): run `manage.py vectors rebuild --space {space}`"
            )
        if copy is None or copy.epoch != head.epoch or copy.seq > head.seq or copy.seq < head.pruned:
            copy = self._start(space, config, head, now)
        try:
            self._apply(space, copy, head)
        except DatabaseError as exc:  # the copy kept (if any) serves; a half-built new one never does
            return self._unreachable(space, self._copies.get(space), now, exc)
        copy.synced_at = copy.checked_at = now
        copy.dirty = False
        self._copies[space] = copy
        if self.policy.snapshot_due(copy.since_snapshot, copy.index.count):
            self._snapshot(space, copy)
        return copy

    def _unreachable(self, space: str, copy: _Copy | None, now: float, exc: DatabaseError) -> _Copy:
        """The feed cannot be read: keep serving the copy while it is younger than ``stale_max``."""
        if copy is None or now - copy.synced_at > self.policy.stale_max:
            self._copies.pop(space, None)
            raise StoreUnavailable(
                f"the vector store (the database) cannot be reached to bring the {space} vectors up to date: {exc}"
            ) from exc
        logger.warning("serving %s vectors at %d: the feed cannot be read (%s)", space, copy.seq, exc)
        copy.checked_at = now
        return copy

    def _start(self, space: str, config: SpaceConfig, head: Head, now: float) -> _Copy:
        """A copy from the local snapshot when it belongs to the feed's epoch, else an empty one."""
        try:
            index = VectorIndex.load(self.directory(space), config)
        except VectorIndexError as exc:
            logger.info("%s vectors: no usable local snapshot (%s); building from the store", space, exc)
        else:
            if index.epoch == head.epoch and head.pruned <= index.seq <= head.seq:
                logger.info("%s vectors: local snapshot at %d, the feed at %d", space, index.seq, head.seq)
                copy = _Copy(index, head.epoch, index.seq, now, now)
                if index.converted:  # saved again as configured: the next start need not convert (nor hold both)
                    self._snapshot(space, copy)
                return copy
            logger.info("%s vectors: the local snapshot is of another epoch or ahead; building from the store", space)
        return _Copy(VectorIndex(config), head.epoch, 0, now, now)

    def _apply(self, space: str, copy: _Copy, head: Head) -> None:
        if head.seq <= copy.seq:
            return
        start, started, changed = copy.seq, time.perf_counter(), 0
        for batch in store_changes(space, after=copy.seq, upto=head.seq, live_only=copy.seq == 0):
            if batch.removed.size:
                changed += copy.index.remove(batch.removed)
            if batch.items:
                copy.index.add(batch.items, batch.vectors)
                changed += len(batch.items)
        logger.info(
            "%s vectors: applied changes %d..%d (%d vectors) in %.3fs",
            space, copy.seq + 1, head.seq, changed, time.perf_counter() - started,
        )  # fmt: skip
        copy.seq = head.seq
        copy.since_snapshot += changed
        if start > 0 and store_head(space).pruned > start:
            # tombstones this copy still needed may have been pruned while it read: build it again next time
            logger.warning("%s vectors: the feed was pruned past %d while this copy caught up", space, start)
            copy.seq = -1

    def _snapshot(self, space: str, copy: _Copy) -> None:
        """Save the copy as this host's local snapshot (a failure only costs a longer restart)."""
        seq = copy.seq  # taken first: the state saved is at least this far along
        try:
            with self.locked(space):
                copy.index.save(self.directory(space), epoch=copy.epoch, seq=seq)
        except (OSError, VectorIndexError) as exc:
            logger.warning("could not save the local %s snapshot: %s", space, exc)
            return
        copy.since_snapshot = 0

    def snapshot(self, space: str) -> None:
        """Save the space's copy now (``vectors snapshot``, before a planned restart)."""
        index = self.get(space)
        copy = self._copies[space]
        assert copy.index is index
        self._snapshot(space, copy)

    @contextmanager
    def locked(self, space: str) -> Iterator[None]:
        """The host's lock on the space's snapshot files: one process of this host saves at a time."""
        with file_lock(self.directory(space) / SNAPSHOT_LOCK):
            yield


_registry: VectorRegistry | None = None
_registry_lock = threading.Lock()


def vector_registry() -> VectorRegistry:
    """This process's registry, for the configured ``VECTORS_DIR`` (created on first use)."""
    global _registry
    root = Path(settings.VECTORS_DIR)
    with _registry_lock:
        if _registry is None or _registry.root != root:
            policy = SyncPolicy(
                interval=settings.VECTORS_SYNC_SECONDS,
                stale_max=settings.VECTORS_STALE_MAX_SECONDS,
                fraction=settings.VECTORS_SNAPSHOT_FRACTION,
                min_vectors=settings.VECTORS_SNAPSHOT_MIN_VECTORS,
            )
            _registry = VectorRegistry(root, space_config, policy)
        return _registry


def vector_registry_reset() -> None:
    """Forget every loaded copy (tests, or after settings change)."""
    global _registry
    with _registry_lock:
        _registry = None
