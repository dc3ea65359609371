"""The backup folder's manifest: what it holds, counts, and a SHA-256 per file, checked before any restore."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from apps.core.files import file_sha256

FORMAT = 1
MANIFEST = "manifest.json"


class BackupError(Exception):
    """A backup cannot be written or restored; the message says why, fit for users."""


class BackupDamaged(BackupError):
    """The backup folder does not match its manifest (a file changed, missing or added)."""


@dataclass
class Manifest:
    created_at: str
    versions: dict[str, str]
    database: dict[str, Any]
    graph: dict[str, int]
    ledger: dict[str, Any]
    vectors: dict[str, int]
    chain: dict[str, Any]
    media: dict[str, int] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # relative path -> sha256
    format: int = FORMAT

    def as_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a ragkg backup manifest of format {FORMAT}")
        return cls(**data)


def folder_files(root: Path) -> list[str]:
    """Every file under ``root`` but the manifest, as sorted relative POSIX paths."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.name != MANIFEST)


def manifest_seal(root: Path, manifest: Manifest) -> Manifest:
    """Hash every file of the backup into the manifest and write it (last: its presence marks a complete backup)."""
    manifest.files = {name: file_sha256(root / name) for name in folder_files(root)}
    tmp = root / f".{MANIFEST}.tmp"
    tmp.write_text(manifest.as_json(), encoding="utf-8")
    tmp.replace(root / MANIFEST)
    return manifest


def manifest_verify(root: Path) -> Manifest:
    """Read the manifest and check every file against it; raise BackupDamaged on any difference."""
    path = root / MANIFEST
    try:
        manifest = Manifest.from_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BackupDamaged(f"{root} holds no {MANIFEST}: not a ragkg backup, or an unfinished one") from None
    except (ValueError, TypeError) as exc:
        raise BackupDamaged(f"{path} is unreadable: {exc}") from exc
    present = set(folder_files(root))
    problems = [f"missing: {name}" for name in sorted(manifest.files.keys() - present)]
    problems += [f"not in the manifest: {name}" for name in sorted(present - manifest.files.keys())]
    problems += [
        f"checksum differs: {name}"
        for name in sorted(manifest.files.keys() & present)
        if file_sha256(root / name) != manifest.files[name]
    ]
    if problems:
        raise BackupDamaged(f"the backup in {root} is damaged ({'; '.join(problems)}); nothing was restored")
    return manifest
