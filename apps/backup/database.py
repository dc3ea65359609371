"""The relational database: SQLite through its online backup API, any other engine as Django JSON.

SQLite is copied page by page with ``sqlite3.Connection.backup`` (consistent while the app runs)
and restored the same way into the live database: pages, not statements, so the change log's
append-only triggers neither fire nor need to be lifted. Other engines (PostgreSQL) are written
with ``dumpdata`` and loaded with ``flush`` + ``loaddata``; the flush empties the change-log tables,
which their triggers refuse, so that one step runs in ledger maintenance mode
(apps/ledger/maintenance.py), turned off again right after.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.db import connection

from apps.backup.manifest import BackupError

SQLITE_FILE = "database.sqlite3"
JSON_FILE = "database.json"


def _raw_sqlite() -> Any:
    connection.ensure_connection()
    if connection.in_atomic_block:
        raise BackupError("the database cannot be restored inside a transaction")
    return connection.connection


def database_dump(*, folder: Path, portable: bool = False) -> dict[str, Any]:
    """Write the database into ``folder``; return the manifest's description of it.

    ``portable``: JSON even for SQLite (to move to PostgreSQL, say)."""
    if connection.vendor == "sqlite" and not portable:
        target = sqlite3.connect(folder / SQLITE_FILE)
        try:
            _raw_sqlite().backup(target)
        finally:
            target.close()
        return {"vendor": "sqlite", "file": SQLITE_FILE, "format": "sqlite3 online backup"}
    call_command("dumpdata", output=str(folder / JSON_FILE), indent=None, verbosity=0)
    return {"vendor": connection.vendor, "file": JSON_FILE, "format": "django dumpdata json"}


def database_load(*, folder: Path, described: dict[str, Any]) -> None:
    """Replace the database's content with the backup's."""
    path = folder / described["file"]
    if described["file"] == SQLITE_FILE:
        if connection.vendor != "sqlite":
            raise BackupError(f"this backup holds a SQLite database; the configured one is {connection.vendor}")
        source = sqlite3.connect(path)
        try:
            source.backup(_raw_sqlite())
        finally:
            source.close()
        return
    from apps.ledger.maintenance import maintenance

    with maintenance(True):
        call_command("flush", interactive=False, inhibit_post_migrate=True, verbosity=0)
        call_command("loaddata", str(path), verbosity=0)
