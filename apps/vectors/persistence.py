"""Saving and loading one space's index: atomic snapshots behind a manifest.

This is a host's local snapshot of its copy (apps/vectors/registry.py), never shared between hosts:
it only shortens a restart. A space's folder holds ``index.<version>.faiss``, ``sidecar.<version>.npz``
and ``manifest.json``, which names the feed's epoch and the sequence number the snapshot stands at.
Each file is written to a temporary name in the same folder, fsynced, renamed into place
(``os.replace``) and the folder fsynced. The manifest is written last: replacing it is the
commit, so a writer killed at any moment leaves the previous manifest naming complete files.
The previous version's files are kept one save longer for readers that read the old manifest
just before the switch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from apps.core.files import file_sha256, fsync_path
from apps.vectors._faiss import faiss
from apps.vectors.errors import IndexCorrupt, IndexMissing, IndexSaveFailed
from apps.vectors.sidecar import Sidecar
from apps.vectors.types import Ids

logger = logging.getLogger(__name__)

FORMAT = 2
MANIFEST = "manifest.json"
VERSION_FILE = re.compile(r"(index|sidecar)\.(\d+)\.(faiss|npz)")  # the files of a version

Stamp = tuple[int, int, int]


@dataclass(frozen=True)
class Manifest:
    space: str
    version: int
    dimension: int
    index_type: str
    trained: bool
    model: str
    count: int
    tombstones: int
    index_file: str
    index_sha256: str
    sidecar_file: str
    sidecar_sha256: str
    saved_at: str
    epoch: str
    seq: int
    format: int = FORMAT

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        data = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(data, dict) or set(data) != names:
            raise ValueError("unexpected manifest fields")
        if data["format"] != FORMAT:
            raise ValueError(f"manifest format {data['format']!r}, this code reads {FORMAT}")
        return cls(**data)


@dataclass(frozen=True)
class Snapshot:
    manifest: Manifest
    index: Any
    sidecar: Sidecar
    tombstones: Ids


def manifest_stamp(directory: Path) -> Stamp | None:
    """A cheap fingerprint of the manifest (one ``stat``): it changes with every save."""
    try:
        st = (directory / MANIFEST).stat()
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_ino, st.st_size)


def manifest_read(directory: Path) -> Manifest:
    path = directory / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise IndexMissing(f"no saved vector index in {directory}") from None
    try:
        return Manifest.from_json(text)
    except (ValueError, TypeError) as exc:
        raise IndexCorrupt(f"{path} is unreadable ({exc}); run `manage.py vectors rebuild`") from exc


# --- writing --------------------------------------------------------------------------


def _write_atomic(target: Path, write: Callable[[Path], None]) -> str:
    """Write ``target`` through a temporary file in its folder; return the file's SHA-256."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        digest = file_sha256(tmp)
        fsync_path(tmp)
        tmp.replace(target)
    except (OSError, RuntimeError) as exc:  # faiss reports a failed write as RuntimeError
        tmp.unlink(missing_ok=True)
        raise IndexSaveFailed(
            f"could not write {target} ({exc}); the saved version is unchanged. Free space in "
            f"{target.parent}, then run `manage.py vectors check --repair`"
        ) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_path(target.parent)
    return digest


def _write_index(index: Any) -> Callable[[Path], None]:
    return lambda path: faiss.write_index(index, str(path))


def _write_sidecar(sidecar: Sidecar, tombstones: Ids) -> Callable[[Path], None]:
    arrays: dict[str, Any] = {"tombstones": tombstones, **sidecar.to_arrays()}

    def write(path: Path) -> None:
        with open(path, "wb") as handle:
            np.savez(handle, **arrays)

    return write


def _write_manifest(manifest: Manifest) -> Callable[[Path], None]:
    text = json.dumps(dataclasses.asdict(manifest), indent=2, sort_keys=True) + "\n"

    def write(path: Path) -> None:
        path.write_text(text, encoding="utf-8")

    return write


def _disk_version(directory: Path) -> int:
    with contextlib.suppress(IndexMissing, IndexCorrupt):
        return manifest_read(directory).version
    return 0


def snapshot_write(
    directory: Path, *, fields: dict[str, Any], index: Any, sidecar: Sidecar, tombstones: Ids, after: int
) -> Manifest:
    """Save a new version (above ``after`` and the saved one) of the index and its sidecar; return its manifest.

    ``fields`` gives the manifest's descriptive fields (space, dimension, index_type, trained, model,
    epoch, seq).
    """
    directory.mkdir(parents=True, exist_ok=True)
    previous = _readable_manifest(directory)
    version = max([after, *(m.version for m in previous)]) + 1
    index_file, sidecar_file = f"index.{version}.faiss", f"sidecar.{version}.npz"
    index_sha = _write_atomic(directory / index_file, _write_index(index))
    sidecar_sha = _write_atomic(directory / sidecar_file, _write_sidecar(sidecar, tombstones))
    manifest = Manifest(
        **fields,
        version=version,
        count=len(sidecar),
        tombstones=int(tombstones.size),
        index_file=index_file,
        index_sha256=index_sha,
        sidecar_file=sidecar_file,
        sidecar_sha256=sidecar_sha,
        saved_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    _write_atomic(directory / MANIFEST, _write_manifest(manifest))
    kept = (name for m in previous for name in (m.index_file, m.sidecar_file))
    _prune(directory, keep={index_file, sidecar_file, *kept})
    logger.info("saved %s vectors v%d: %d vectors in %s", manifest.space, version, manifest.count, directory)
    return manifest


def _readable_manifest(directory: Path) -> list[Manifest]:
    with contextlib.suppress(IndexMissing, IndexCorrupt):
        return [manifest_read(directory)]
    return []


def _prune(directory: Path, *, keep: set[str]) -> None:
    """Remove snapshot files of older versions and temporary files left by killed writers."""
    mine = f".{os.getpid()}.tmp"
    for path in directory.iterdir():
        stale_tmp = path.name.endswith(".tmp") and not path.name.endswith(mine)
        old = VERSION_FILE.fullmatch(path.name) is not None and path.name not in keep
        if stale_tmp or old:
            path.unlink(missing_ok=True)


# --- reading --------------------------------------------------------------------------


def snapshot_read(directory: Path, *, check: Callable[[Manifest], None] | None = None) -> Snapshot:
    """Load the saved version, verifying checksums; ``check`` vets the manifest before the big files are read.

    Raises IndexMissing when nothing was saved, IndexCorrupt when the files are damaged or missing.
    """
    for _ in range(3):
        manifest = manifest_read(directory)
        if check is not None:
            check(manifest)
        try:
            return _read_files(directory, manifest)
        except FileNotFoundError as exc:
            if _disk_version(directory) == manifest.version:
                raise IndexCorrupt(f"{exc.filename} is missing; run `manage.py vectors rebuild`") from exc
            # a writer published a newer version meanwhile: read that one
    raise IndexCorrupt(f"{directory} changed under every attempt to read it")


def _verify(path: Path, expected: str) -> None:
    if not path.exists():
        raise FileNotFoundError(2, "missing", str(path))
    if file_sha256(path) != expected:
        raise IndexCorrupt(f"{path} fails its checksum; run `manage.py vectors rebuild`")


def _read_files(directory: Path, manifest: Manifest) -> Snapshot:
    index_path, sidecar_path = directory / manifest.index_file, directory / manifest.sidecar_file
    _verify(index_path, manifest.index_sha256)
    _verify(sidecar_path, manifest.sidecar_sha256)
    try:
        index = faiss.read_index(str(index_path))
    except RuntimeError as exc:
        raise IndexCorrupt(f"faiss cannot read {index_path}: {exc}") from exc
    try:
        with np.load(sidecar_path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
        tombstones = arrays.pop("tombstones").astype(np.int64)
        sidecar = Sidecar.from_arrays(arrays)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise IndexCorrupt(f"{sidecar_path} is unreadable: {exc}") from exc
    _check_consistent(manifest, index, sidecar, tombstones)
    return Snapshot(manifest, index, sidecar, tombstones)


def _check_consistent(manifest: Manifest, index: Any, sidecar: Sidecar, tombstones: Ids) -> None:
    if int(index.d) != manifest.dimension or int(index.ntotal) != len(sidecar) + tombstones.size:
        raise IndexCorrupt(
            f"{manifest.index_file} holds {index.ntotal} vectors of dimension {index.d}, the manifest says "
            f"{len(sidecar)} + {tombstones.size} removed of dimension {manifest.dimension}"
        )
