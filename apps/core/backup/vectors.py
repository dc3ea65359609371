"""The FAISS indexes: each space's current saved version, copied under the space's writer lock.

apps/vectors/persistence.py saves a version as ``index.<v>.faiss`` + ``sidecar.<v>.npz`` and commits
it by replacing ``manifest.json`` (changes since are in ``journal.<v>.log``, folded into a new version
before the copy); holding the writer lock (apps/vectors/registry.py) while copying
means no writer publishes a new version or prunes the files meanwhile. A restore writes the files
as a version above any on disk (so no process mistakes them for a version it already loaded) and
replaces the manifest last, exactly like a save; running processes pick it up by its new stamp.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

from apps.core.backup.manifest import BackupError
from apps.core.files import fsync_path
from apps.vectors.errors import IndexCorrupt, IndexMissing
from apps.vectors.journal import journal_path
from apps.vectors.persistence import MANIFEST, VERSION_FILE, Manifest, manifest_read
from apps.vectors.registry import vector_registry
from apps.vectors.types import SPACES

FOLDER = "vectors"


def _saved(directory: Path) -> Manifest | None:
    try:
        return manifest_read(directory)
    except IndexMissing:
        return None
    except IndexCorrupt as exc:
        raise BackupError(f"the saved vectors in {directory} are damaged: {exc}") from exc


def vectors_dump(*, folder: Path) -> dict[str, int]:
    """Copy each space's current version into ``folder``; return the vectors per space."""
    registry = vector_registry()
    counts: dict[str, int] = {}
    for space in SPACES:
        with registry.locked(space):
            if (registry.directory(space) / MANIFEST).exists():
                registry.compact(space)  # the journal's changes into the snapshot that is copied
            manifest = _saved(registry.directory(space))
            if manifest is None:
                continue
            target = folder / FOLDER / space
            target.mkdir(parents=True)
            for name in (manifest.index_file, manifest.sidecar_file, MANIFEST):
                shutil.copyfile(registry.directory(space) / name, target / name)
            counts[space] = manifest.count
    return counts


def _place(source: Path | str, target: Path) -> None:
    """Write ``target`` from a file (Path) or text (str) through a temporary file and a rename."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    if isinstance(source, Path):
        shutil.copyfile(source, tmp)
    else:
        tmp.write_text(source, encoding="utf-8")
    fsync_path(tmp)
    tmp.replace(target)


def _restore_space(source: Path, directory: Path) -> int:
    backed = manifest_read(source)
    current = _saved(directory)
    version = max(backed.version, current.version if current else 0) + 1
    manifest = dataclasses.replace(
        backed,
        version=version,
        index_file=f"index.{version}.faiss",
        sidecar_file=f"sidecar.{version}.npz",
        saved_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    journal_path(directory, version).unlink(missing_ok=True)  # the restored version starts with no changes
    _place(source / backed.index_file, directory / manifest.index_file)
    _place(source / backed.sidecar_file, directory / manifest.sidecar_file)
    _place(json.dumps(dataclasses.asdict(manifest), indent=2, sort_keys=True) + "\n", directory / MANIFEST)
    fsync_path(directory)
    return manifest.count


def _clear_space(directory: Path) -> None:
    (directory / MANIFEST).unlink(missing_ok=True)
    for path in directory.iterdir():
        if VERSION_FILE.fullmatch(path.name):
            path.unlink()


def vectors_load(*, folder: Path) -> dict[str, int]:
    """Put the backup's version of each space in place (a space it lacks is emptied); return the counts."""
    registry = vector_registry()
    counts: dict[str, int] = {}
    for space in SPACES:
        source = folder / FOLDER / space
        with registry.locked(space):
            if source.is_dir():
                counts[space] = _restore_space(source, registry.directory(space))
            else:
                _clear_space(registry.directory(space))
    return counts


def vectors_present() -> bool:
    registry = vector_registry()
    return any((registry.directory(space) / MANIFEST).exists() for space in SPACES)
