"""The backup manifest: every file hashed, and a backup that differs from it in any way refused."""

from __future__ import annotations

import json
from pathlib import Path
from unittest.mock import Mock

import pytest

from apps.backup.manifest import (
    MANIFEST,
    BackupDamaged,
    Manifest,
    manifest_seal,
    manifest_verify,
)
from apps.backup.services import backup_restore
from apps.core.files import file_sha256


def sealed(root: Path) -> Manifest:
    (root / "graph").mkdir(parents=True)
    (root / "graph" / "nodes.jsonl").write_text('{"key": "1"}\n')
    (root / "database.sqlite3").write_bytes(b"SQLite format 3\x00" + bytes(100))
    manifest = Manifest(
        created_at="2026-11-30T03:00:00+00:00",
        versions={"django": "6.0"},
        database={"vendor": "sqlite", "file": "database.sqlite3"},
        graph={"nodes": 1, "relationships": 0},
        ledger={"entries": 0, "tree_size": 0, "root": ""},
        vectors={"text": 0},
        chain={"chain_id": 31337, "managed": False},
    )
    return manifest_seal(root, manifest)


def test_sealing_hashes_every_file_and_the_manifest_reads_back(tmp_path: Path) -> None:
    manifest = sealed(tmp_path)
    assert manifest.files == {
        "database.sqlite3": file_sha256(tmp_path / "database.sqlite3"),
        "graph/nodes.jsonl": file_sha256(tmp_path / "graph" / "nodes.jsonl"),
    }
    assert json.loads((tmp_path / MANIFEST).read_text())["graph"] == {"nodes": 1, "relationships": 0}
    assert manifest_verify(tmp_path) == manifest
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda root: (root / "graph" / "nodes.jsonl").write_text('{"key": "2"}\n'), "checksum differs: graph/nodes"),
        (lambda root: (root / "database.sqlite3").unlink(), "missing: database.sqlite3"),
        (lambda root: (root / "extra.txt").write_text("x"), "not in the manifest: extra.txt"),
        (lambda root: (root / MANIFEST).unlink(), "holds no manifest.json"),
        (lambda root: (root / MANIFEST).write_text("{not json"), "manifest.json is unreadable"),
        (lambda root: (root / MANIFEST).write_text('{"format": 99}'), "not a ragkg backup manifest"),
    ],
    ids=["changed", "missing", "added", "no-manifest", "bad-json", "other-format"],
)
def test_a_damaged_backup_is_named_and_refused(tmp_path: Path, damage: object, message: str) -> None:
    sealed(tmp_path)
    assert callable(damage)
    damage(tmp_path)
    with pytest.raises(BackupDamaged, match=message):
        manifest_verify(tmp_path)


def test_restore_checks_the_hashes_before_touching_anything(tmp_path: Path) -> None:
    sealed(tmp_path)
    (tmp_path / "database.sqlite3").write_bytes(b"tampered")
    driver = Mock(side_effect=AssertionError("the graph was touched"))
    driver.execute_query.side_effect = AssertionError("the graph was touched")
    driver.session.side_effect = AssertionError("the graph was touched")
    with pytest.raises(BackupDamaged, match="nothing was restored"):
        backup_restore(driver=driver, source=tmp_path, force=True)
    assert not driver.method_calls
