"""The change log and its snapshots are append-only: the database refuses UPDATE and DELETE
(and TRUNCATE on PostgreSQL) of their rows, whoever sends them. See apps/ledger/maintenance.py
for the one sanctioned way around it (the test harness emptying its database)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

TABLES = ("ledger_changeentry", "ledger_snapshot")
MESSAGE = "the knowledge change log is append-only"

SQLITE = [
    f"""
CREATE TRIGGER {table}_no_{verb.lower()} BEFORE {verb} ON {table}
WHEN NOT ragkg_ledger_maintenance()
BEGIN SELECT RAISE(ABORT, '{MESSAGE}: {verb} of {table} refused'); END
"""
    for table in TABLES
    for verb in ("UPDATE", "DELETE")
]
SQLITE_REVERSE = [f"DROP TRIGGER IF EXISTS {table}_no_{verb}" for table in TABLES for verb in ("update", "delete")]

POSTGRESQL = [
    f"""
CREATE OR REPLACE FUNCTION ragkg_ledger_refuse() RETURNS trigger AS $$
BEGIN
    IF coalesce(current_setting('ragkg.ledger_maintenance', true), 'off') = 'on' THEN
        RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    END IF;
    RAISE EXCEPTION '{MESSAGE}: % of % refused', TG_OP, TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
END
$$ LANGUAGE plpgsql
""",
    *(
        f"""
CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table}
FOR EACH ROW EXECUTE FUNCTION ragkg_ledger_refuse()
"""
        for table in TABLES
    ),
    *(
        f"""
CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}
FOR EACH STATEMENT EXECUTE FUNCTION ragkg_ledger_refuse()
"""
        for table in TABLES
    ),
]
POSTGRESQL_REVERSE = [
    *(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}" for table in TABLES),
    *(f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table}" for table in TABLES),
    "DROP FUNCTION IF EXISTS ragkg_ledger_refuse()",
]


def _run(schema_editor: Any, statements: dict[str, list[str]]) -> None:
    vendor = schema_editor.connection.vendor
    if vendor not in statements:
        raise RuntimeError(f"the append-only change log needs SQLite or PostgreSQL, not {vendor}")
    for statement in statements[vendor]:
        schema_editor.execute(statement, params=None)


def forward(apps: Any, schema_editor: Any) -> None:
    _run(schema_editor, {"sqlite": SQLITE, "postgresql": POSTGRESQL})


def backward(apps: Any, schema_editor: Any) -> None:
    _run(schema_editor, {"sqlite": SQLITE_REVERSE, "postgresql": POSTGRESQL_REVERSE})


class Migration(migrations.Migration):
    dependencies = [("ledger", "0001_initial")]

    operations = [migrations.RunPython(forward, backward)]
