"""Every Cypher statement the app sends names its database (``NEO4J_DATABASE``), so that a deployment on
a non-default database reads what it writes: a static scan of every ``execute_query`` call and every
session opened in the app's code (the server-info probe asks the ``system`` database by design)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCANNED = ("apps", "ragkg", "scripts")
ALLOWED = {("apps/graph/selectors.py", "system")}  # graph_server_info: the server's own database


def calls(path: Path) -> Iterator[tuple[ast.Call, str]]:
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        is_call = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        if is_call and node.func.attr in ("execute_query", "session"):  # type: ignore[attr-defined]
            yield node, node.func.attr  # type: ignore[attr-defined,misc]


def test_every_query_and_session_names_the_database() -> None:
    unnamed: list[str] = []
    scanned = 0
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = str(path.relative_to(ROOT))
            for call, kind in calls(path):
                scanned += 1
                keyword = "database_" if kind == "execute_query" else "database"
                named = [k for k in call.keywords if k.arg == keyword]
                if not named:
                    unnamed.append(f"{relative}:{call.lineno} {kind}() without {keyword}=")
                elif isinstance(named[0].value, ast.Constant) and (relative, named[0].value.value) not in ALLOWED:
                    unnamed.append(f"{relative}:{call.lineno} {kind}() on the fixed database {named[0].value.value!r}")
    assert scanned > 10  # the scan found the app's queries
    assert not unnamed, "queries that do not name NEO4J_DATABASE:\n" + "\n".join(unnamed)
