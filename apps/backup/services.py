"""Writing a backup folder and restoring one (docs/backup.md)."""

from __future__ import annotations

import logging
import platform
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import django
from neo4j import Driver

from apps.backup.chain import chain_anchor_check, chain_dump, chain_load
from apps.backup.database import database_dump, database_load
from apps.backup.graph import graph_counts, graph_dump, graph_load
from apps.backup.manifest import BackupError, Manifest, manifest_seal, manifest_verify
from apps.backup.media import media_dump, media_load
from apps.backup.vectors import vectors_dump, vectors_load, vectors_present

logger = logging.getLogger(__name__)


def _ledger_state() -> dict[str, Any]:
    from apps.ledger.models import ChangeEntry
    from apps.ledger.services import tree_head

    head = tree_head()
    return {"entries": ChangeEntry.objects.count(), "tree_size": head.size, "root": head.root}


def _versions(driver: Driver) -> dict[str, str]:
    from apps.vectors._faiss import faiss

    return {
        "python": platform.python_version(),
        "django": django.get_version(),
        "neo4j": str(driver.get_server_info().agent),
        "faiss": str(getattr(faiss, "__version__", "unknown")),
    }


def backup_create(*, driver: Driver, target: Path, portable: bool = False) -> Manifest:
    """Write a backup into the new folder ``target`` (or the .tar file ``target``); return its manifest.

    The parts are taken one after the other (database, graph, vectors, chain), each consistent in
    itself; stop writers (ingestion, curation) for a backup whose parts agree exactly. ``portable``
    writes the database as JSON even when it is SQLite.
    """
    if target.exists():
        raise BackupError(f"{target} exists already: name a new folder or .tar file")
    if target.suffix == ".tar":
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            manifest = backup_create(driver=driver, target=Path(tmp) / "backup", portable=portable)
            with tarfile.open(target, "w") as tar:
                tar.add(Path(tmp) / "backup", arcname=".")
            return manifest
    target.mkdir(parents=True)
    manifest = Manifest(
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        versions=_versions(driver),
        database=database_dump(folder=target, portable=portable),
        ledger=_ledger_state(),
        graph=graph_dump(driver=driver, folder=target),
        vectors=vectors_dump(folder=target),
        chain=chain_dump(folder=target),
        media=media_dump(folder=target),
    )
    manifest_seal(target, manifest)
    logger.info("backup written to %s: %s", target, manifest.graph)
    return manifest


@dataclass
class RestoreReport:
    manifest: Manifest
    steps: dict[str, float] = field(default_factory=dict)  # seconds per step
    checks: list[tuple[str, bool, str]] = field(default_factory=list)  # (name, ok, detail)

    @property
    def seconds(self) -> float:
        return round(sum(self.steps.values()), 2)

    @property
    def ok(self) -> bool:
        return all(ok for _, ok, _ in self.checks)


def target_is_empty(*, driver: Driver) -> bool:
    from apps.ingest.models import Document
    from apps.ledger.models import ChangeEntry

    nodes = graph_counts(driver=driver)["nodes"]
    return not (nodes or Document.objects.exists() or ChangeEntry.objects.exists() or vectors_present())


def backup_restore(*, driver: Driver, source: Path, force: bool = False) -> RestoreReport:
    """Check the backup against its manifest, then restore database, graph, vectors and chain state
    and check the result. Nothing changes when the backup is damaged, or the target holds data and
    ``force`` is not given."""
    if source.is_file() and tarfile.is_tarfile(source):
        with tempfile.TemporaryDirectory() as tmp:
            with tarfile.open(source) as tar:
                tar.extractall(tmp, filter="data")
            return backup_restore(driver=driver, source=Path(tmp), force=force)
    report = RestoreReport(manifest_verify(source))
    if not force and not target_is_empty(driver=driver):
        raise BackupError("the database, graph or vector indexes hold data: restore with --force to replace it")
    manifest = report.manifest
    steps: list[tuple[str, Callable[[], object]]] = [
        ("database", lambda: database_load(folder=source, described=manifest.database)),
        ("graph", lambda: graph_load(driver=driver, folder=source)),
        ("vectors", lambda: vectors_load(folder=source)),
        ("media", lambda: media_load(folder=source)),
        ("chain", lambda: chain_load(folder=source, described=manifest.chain)),
        ("checks", lambda: report.checks.extend(restore_checks(driver=driver, manifest=manifest))),
    ]
    for name, step in steps:
        started = time.perf_counter()
        step()
        report.steps[name] = round(time.perf_counter() - started, 2)
        logger.info("restore: %s in %.2fs", name, report.steps[name])
    return report


def restore_checks(*, driver: Driver, manifest: Manifest) -> list[tuple[str, bool, str]]:
    """What `vectors check` and `ledger verify --graph` say, and whether the counts match the manifest."""
    from apps.ledger.chain import chain_from_settings
    from apps.ledger.verify import log_verify
    from apps.vectors.maintenance import vectors_check

    checks: list[tuple[str, bool, str]] = []
    graph = graph_counts(driver=driver)
    checks.append(("graph counts", graph == manifest.graph, f"{graph}, backup {manifest.graph}"))
    ledger = _ledger_state()
    checks.append(("ledger", ledger == manifest.ledger, f"{ledger}, backup {manifest.ledger}"))
    for space in sorted(manifest.vectors):
        check = vectors_check(driver=driver, space=space)
        detail = f"{check.graph} nodes, {check.stored} vectors, {len(check.missing)} missing, {len(check.extra)} extra"
        checks.append((f"vectors check {space}", check.ok and check.stored == manifest.vectors[space], detail))
    verified = log_verify(chain=chain_from_settings(read_only=True), driver=driver)
    first = verified.problems[0].message if verified.problems else "ok"
    detail = (
        f"{verified.entries} entries, {verified.anchors_checked} anchors, {verified.graph_checked} subjects: {first}"
    )
    checks.append(("ledger verify --graph", verified.ok, detail))
    problem = chain_anchor_check(manifest.chain)
    checks.append(("chain anchor", problem is None, problem or f"tree size {manifest.chain.get('tree_size')}"))
    return checks
