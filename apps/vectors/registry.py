"""The per-process registry of loaded indexes: lazy, and reloading when a newer version is saved.

Readers (web workers, query tasks) call :meth:`VectorRegistry.get`: a ``stat`` of the manifest and
one of the journal per call tell whether another process saved a new version or committed changes
since; a new version is loaded by one thread while the others keep searching the old one, then
swapped in, and new journal records are replayed onto the loaded index. The writer (the ingest
worker, or a management command) goes through :meth:`VectorRegistry.writing`, which holds the
space's advisory file lock, so writers in several processes take turns, each starting from the
latest state; :meth:`VectorRegistry.commit` appends the change to the journal (apps/vectors/journal.py)
and folds the journal into a new snapshot when it has grown.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from apps.vectors.config import space_config
from apps.vectors.errors import IndexMissing, IndexSaveFailed, VectorIndexError
from apps.vectors.index import VectorIndex
from apps.vectors.journal import Change, journal_append, journal_path, journal_read, journal_size
from apps.vectors.locks import file_lock
from apps.vectors.persistence import Stamp, manifest_read, manifest_stamp
from apps.vectors.types import SpaceConfig

logger = logging.getLogger(__name__)

WRITER_LOCK = ".writer.lock"


@dataclass
class _Loaded:
    index: VectorIndex
    stamp: Stamp | None
    journal_end: int = 0  # bytes of the version's journal replayed onto ``index``
    journal_vectors: int = 0  # vectors those records added or removed


@dataclass(frozen=True)
class JournalPolicy:
    """When the journal is folded into a snapshot: once its changes touch ``fraction`` of the index's
    vectors, and at least ``min_vectors``."""

    fraction: float = 0.05
    min_vectors: int = 2048

    def due(self, journal_vectors: int, count: int) -> bool:
        return journal_vectors >= max(self.min_vectors, self.fraction * count)


class VectorRegistry:
    def __init__(self, root: Path, config: Callable[[str], SpaceConfig], journal: JournalPolicy | None = None) -> None:
        self.root = root
        self._config = config
        self._policy = journal or JournalPolicy()
        self._loaded: dict[str, _Loaded] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def directory(self, space: str) -> Path:
        return self.root / space

    def _lock(self, space: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(space, threading.Lock())

    def get(self, space: str, *, wait: bool = False) -> VectorIndex:
        """The space's index, loaded on first use and reloaded when a newer version was saved.

        While one thread loads a new version, others keep the current one unless ``wait``.
        """
        loaded = self._loaded.get(space)
        if loaded is not None and self._current(space, loaded):
            return loaded.index
        lock = self._lock(space)
        if not lock.acquire(blocking=wait or loaded is None):
            assert loaded is not None
            return loaded.index
        try:
            return self._refresh(space).index
        finally:
            lock.release()

    def _journal(self, space: str, index: VectorIndex) -> Path:
        return journal_path(self.directory(space), index.version)

    def _current(self, space: str, loaded: _Loaded) -> bool:
        """Nothing saved or committed since ``loaded`` was (two ``stat`` calls)."""
        if loaded.stamp != manifest_stamp(self.directory(space)):
            return False
        return journal_size(self._journal(space, loaded.index)) == loaded.journal_end

    def _refresh(self, space: str) -> _Loaded:
        stamp = manifest_stamp(self.directory(space))
        current = self._loaded.get(space)
        if current is not None and self._current(space, current):
            return current  # another thread got there first
        try:
            if current is not None and self._saved_version(space) == current.index.version:
                # the same version: rewritten (this process's own save) or its journal grew
                fresh = _Loaded(current.index, stamp, current.journal_end, current.journal_vectors)
            else:
                fresh = _Loaded(self._load(space), stamp)
        except VectorIndexError:
            if current is None:
                raise
            logger.exception("keeping %s vectors v%d: the saved version cannot be loaded", space, current.index.version)
            fresh = _Loaded(current.index, stamp, current.journal_end, current.journal_vectors)
        self._replay(space, fresh)
        self._loaded[space] = fresh
        return fresh

    def _replay(self, space: str, loaded: _Loaded) -> None:
        """Apply the journal records after ``loaded.journal_end`` to its index, in order."""
        changes, end = journal_read(self._journal(space, loaded.index), loaded.journal_end)
        for change in changes:
            _apply(loaded.index, change)
            loaded.journal_vectors += change.added + int(change.removed.size)
        if changes:
            logger.info("replayed %d %s journal records onto v%d", len(changes), space, loaded.index.version)
        loaded.journal_end = end

    def _saved_version(self, space: str) -> int:
        try:
            return manifest_read(self.directory(space)).version
        except IndexMissing:
            return 0

    def _load(self, space: str) -> VectorIndex:
        config = self._config(space)
        try:
            index = VectorIndex.load(self.directory(space), config)
        except IndexMissing:
            logger.info("no saved %s vectors yet: starting an empty %s index", space, config.index_type)
            return VectorIndex(config)
        logger.info("loaded %s vectors v%d (%d vectors)", space, index.version, index.count)
        return index

    def put(self, space: str, index: VectorIndex) -> None:
        """Make ``index`` (just saved) the one this process uses."""
        self._loaded[space] = _Loaded(index, manifest_stamp(self.directory(space)))

    @contextmanager
    def locked(self, space: str) -> Iterator[None]:
        """The space's cross-process writer lock: one writer at a time, in any process."""
        with file_lock(self.directory(space) / WRITER_LOCK):
            yield

    @contextmanager
    def writing(self, space: str) -> Iterator[VectorIndex]:
        """The latest saved index of the space, under the writer lock."""
        with self.locked(space):
            yield self.get(space, wait=True)

    def commit(self, space: str, index: VectorIndex, change: Change) -> None:
        """Make ``change``, already applied to ``index`` (inside :meth:`writing`), durable: appended to
        the journal, or folded with it into a new snapshot when the journal is due (or there is none
        to append to yet). A failed append leaves the journal as it was and, like a failed save,
        makes this process forget the changed index."""
        with self._lock(space):  # no reader thread of this process replays the record while it is appended
            loaded = self._loaded.get(space)
            if loaded is None or loaded.index is not index:
                raise RuntimeError("commit() is for the index writing() gave")
            touched = loaded.journal_vectors + change.added + int(change.removed.size)
            if index.version == 0 or self._policy.due(touched, index.count):
                self.save(space, index)
                return
            path = self._journal(space, index)
            try:
                loaded.journal_end = journal_append(path, change, valid_end=loaded.journal_end)
            except OSError as exc:
                self._loaded.pop(space, None)
                raise IndexSaveFailed(
                    f"could not append to the {space} journal ({exc}); the saved vectors are unchanged. Free space "
                    f"in {self.directory(space)}, then run `manage.py vectors check --repair`"
                ) from exc
            except BaseException:
                self._loaded.pop(space, None)
                raise
            loaded.journal_vectors = touched

    def compact(self, space: str) -> None:
        """Fold the space's journal into a new snapshot (inside :meth:`locked`; backups copy snapshots)."""
        index = self.get(space, wait=True)
        loaded = self._loaded[space]
        if loaded.journal_end:
            self.save(space, index)

    def save(self, space: str, index: VectorIndex) -> None:
        """Save (inside :meth:`writing`) and remember the new version as this process's.

        A failed save (a full disk, say) leaves the saved version as it was; this process then forgets
        the index it changed in memory, so its next use reloads the saved one instead of serving
        vectors that were never saved."""
        try:
            index.save(self.directory(space))
        except BaseException:
            self._loaded.pop(space, None)
            raise
        self.put(space, index)


def _apply(index: VectorIndex, change: Change) -> None:
    if change.removed.size:
        index.remove(change.removed)
    if change.items:
        index.add(change.items, change.vectors)


_registry: VectorRegistry | None = None
_registry_lock = threading.Lock()


def vector_registry() -> VectorRegistry:
    """This process's registry, for the configured ``VECTORS_DIR`` (created on first use)."""
    global _registry
    root = Path(settings.VECTORS_DIR)
    with _registry_lock:
        if _registry is None or _registry.root != root:
            policy = JournalPolicy(settings.VECTORS_JOURNAL_FRACTION, settings.VECTORS_JOURNAL_MIN_VECTORS)
            _registry = VectorRegistry(root, space_config, policy)
        return _registry


def vector_registry_reset() -> None:
    """Forget every loaded index (tests, or after settings change)."""
    global _registry
    with _registry_lock:
        _registry = None
