"""Stored images and thumbnails (MEDIA_ROOT): content-addressed files, copied as they are."""

from __future__ import annotations

import shutil
from pathlib import Path

from django.conf import settings

FOLDER = "media"


def media_dump(*, folder: Path) -> dict[str, int]:
    """Copy every file under MEDIA_ROOT into ``folder``; return how many and their bytes."""
    root = Path(settings.MEDIA_ROOT)
    files = [p for p in root.rglob("*") if p.is_file()] if root.is_dir() else []
    for path in files:
        target = folder / FOLDER / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}


def media_load(*, folder: Path) -> int:
    """Put the backup's files back under MEDIA_ROOT (files the backup lacks stay); return how many."""
    source = folder / FOLDER
    if not source.is_dir():
        return 0
    shutil.copytree(source, Path(settings.MEDIA_ROOT), dirs_exist_ok=True)
    return sum(1 for p in source.rglob("*") if p.is_file())
