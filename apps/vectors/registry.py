"""The per-process registry of loaded indexes: lazy, and reloading when a newer version is saved.

Readers (web workers, query tasks) call :meth:`VectorRegistry.get`: one ``stat`` of the manifest per
call tells whether another process saved a new version; the new version is loaded by one thread
while the others keep searching the old one, then swapped in. The writer (the ingest worker, or
a management command) goes through :meth:`VectorRegistry.writing`, which holds the space's
advisory file lock, so writers in several processes take turns, each starting from the latest save.
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
from apps.vectors.errors import IndexMissing, VectorIndexError
from apps.vectors.index import VectorIndex
from apps.vectors.locks import file_lock
from apps.vectors.persistence import Stamp, manifest_read, manifest_stamp
from apps.vectors.types import SpaceConfig

logger = logging.getLogger(__name__)

WRITER_LOCK = ".writer.lock"


@dataclass
class _Loaded:
    index: VectorIndex
    stamp: Stamp | None


class VectorRegistry:
    def __init__(self, root: Path, config: Callable[[str], SpaceConfig]) -> None:
        self.root = root
        self._config = config
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
        if loaded is not None and loaded.stamp == manifest_stamp(self.directory(space)):
            return loaded.index
        lock = self._lock(space)
        if not lock.acquire(blocking=wait or loaded is None):
            assert loaded is not None
            return loaded.index
        try:
            return self._refresh(space).index
        finally:
            lock.release()

    def _refresh(self, space: str) -> _Loaded:
        stamp = manifest_stamp(self.directory(space))
        current = self._loaded.get(space)
        if current is not None and current.stamp == stamp:
            return current  # another thread got there first
        try:
            if current is not None and self._saved_version(space) == current.index.version:
                fresh = _Loaded(current.index, stamp)  # rewritten, not newer (this process's own save)
            else:
                fresh = _Loaded(self._load(space), stamp)
        except VectorIndexError:
            if current is None:
                raise
            logger.exception("keeping %s vectors v%d: the saved version cannot be loaded", space, current.index.version)
            fresh = _Loaded(current.index, stamp)
        self._loaded[space] = fresh
        return fresh

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


_registry: VectorRegistry | None = None
_registry_lock = threading.Lock()


def vector_registry() -> VectorRegistry:
    """This process's registry, for the configured ``VECTORS_DIR`` (created on first use)."""
    global _registry
    root = Path(settings.VECTORS_DIR)
    with _registry_lock:
        if _registry is None or _registry.root != root:
            _registry = VectorRegistry(root, space_config)
        return _registry


def vector_registry_reset() -> None:
    """Forget every loaded index (tests, or after settings change)."""
    global _registry
    with _registry_lock:
        _registry = None
