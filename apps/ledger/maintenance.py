"""The database side of "append-only": how the triggers of migration 0002 tell a refused change
from a sanctioned one.

The triggers refuse every UPDATE and DELETE of ``ledger_changeentry`` and ``ledger_snapshot``
(and TRUNCATE on PostgreSQL) unless the connection is in maintenance mode: on SQLite a function
``ragkg_ledger_maintenance()`` that only ragkg's own connections define (any other client gets
"no such function", which refuses too), on PostgreSQL the session setting
``ragkg.ledger_maintenance = 'on'``. Nothing in ragkg turns it on; the test harness does, so
that it can empty its databases between tests.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from django.db import connection as default_connection

_maintenance = False


def _sqlite_flag() -> int:
    return 1 if _maintenance else 0


def _apply(connection: Any) -> None:
    if connection.vendor == "postgresql" and connection.connection is not None:
        with connection.cursor() as cursor:
            flag = "on" if _maintenance else "off"
            cursor.execute("SELECT set_config('ragkg.ledger_maintenance', %s, false)", [flag])


def connection_prepare(sender: Any, connection: Any, **_: Any) -> None:
    """On every new database connection: define the SQLite function, or set the PostgreSQL flag."""
    if connection.vendor == "sqlite":
        connection.connection.create_function("ragkg_ledger_maintenance", 0, _sqlite_flag, deterministic=False)
    elif connection.vendor == "postgresql":
        _apply(connection)


def maintenance_set(on: bool) -> None:
    """Turn maintenance mode on or off for this process's connections."""
    global _maintenance
    _maintenance = on
    _apply(default_connection)


@contextlib.contextmanager
def maintenance(on: bool = True) -> Iterator[None]:
    previous = _maintenance
    maintenance_set(on)
    try:
        yield
    finally:
        maintenance_set(previous)
