"""The vectors: stored in the relational database, so the database part of a backup carries them.

What is recorded here is how many vectors each space held (for the restore's checks). A restore
puts the database back first; this step then gives every space's feed a new epoch, so every
process of every host builds its copy again from the restored rows instead of trusting a local
snapshot or a position in the feed from before the restore (apps/vectors/registry.py).
"""

from __future__ import annotations

from pathlib import Path

from apps.vectors.models import StoredVector
from apps.vectors.registry import vector_registry
from apps.vectors.store import store_count, store_renew
from apps.vectors.types import SPACES


def vectors_dump(*, folder: Path) -> dict[str, int]:
    """The stored vectors per space (their rows are in the database part); ``folder`` gets nothing."""
    del folder
    return {space: count for space in SPACES if (count := store_count(space))}


def vectors_load(*, folder: Path) -> dict[str, int]:
    """After the database's restore: new epochs, and this process's copies rebuilt; return the counts."""
    del folder
    store_renew()
    registry = vector_registry()
    return {space: count for space in SPACES if store_count(space) and (count := registry.reload(space).count)}


def vectors_present() -> bool:
    return StoredVector.objects.filter(removed=False).exists()
