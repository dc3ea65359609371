"""The apps import one another in layers: a static scan of every module under apps/ (imports inside
functions included) builds the graph of app-level imports (apps.X imports apps.Y) and finds its cycles,
the groups of apps that each reach one another.

The known cycles are an allow-list that can only shrink: a new cycle, or an app joining one, fails, and
so does a cycle that is gone while still listed (take it off the list). docs/decisions.md says why
answers and provenance import each other and where the seam between them lies."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Mapping, Set
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ROOT / "apps"

ALLOWED_CYCLES = {
    # An answer's provenance is computed from the answer and shown on its pages (docs/decisions.md).
    frozenset({"answers", "provenance"}),
}


def imported_modules(tree: ast.AST) -> Iterator[str]:
    """Every module an import statement names, and for ``from m import n`` also ``m.n``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def app_of(path: Path) -> str:
    return path.relative_to(APPS).parts[0]


def app_imports() -> dict[str, set[str]]:
    """Each app and the other apps its modules import."""
    graph: dict[str, set[str]] = {}
    for path in sorted(APPS.rglob("*.py")):
        if path.parent == APPS:
            continue
        source = app_of(path)
        targets = graph.setdefault(source, set())
        for module in imported_modules(ast.parse(path.read_text(), str(path))):
            parts = module.split(".")
            if parts[0] == "apps" and len(parts) > 1 and parts[1] != source:
                targets.add(parts[1])
    return graph


def reachable(graph: Mapping[str, Set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def cycles(graph: Mapping[str, Set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one app."""
    reach = {app: reachable(graph, app) for app in graph}
    found = {frozenset({app} | {other for other in reach[app] if app in reach.get(other, ())}) for app in graph}
    return {component for component in found if len(component) > 1}


def test_the_only_import_cycles_are_the_allowed_ones() -> None:
    graph = app_imports()
    assert {"answers", "graph", "ingest", "provenance"} <= set(graph)  # the scan found the apps
    found = cycles(graph)
    assert found - ALLOWED_CYCLES == set(), "a new import cycle between apps (or a larger one)"
    assert ALLOWED_CYCLES - found == set(), "an allowed cycle is gone or smaller: shrink ALLOWED_CYCLES"


def test_the_graph_app_imports_no_other_app() -> None:
    """apps.graph is the ground floor: the driver, every Cypher statement, identity."""
    assert app_imports()["graph"] == set()


def test_identity_uses_only_the_standard_library() -> None:
    tree = ast.parse((APPS / "graph" / "identity.py").read_text())
    roots = {module.split(".")[0] for module in imported_modules(tree)}
    assert roots <= set(sys.stdlib_module_names) | {"__future__"}


def test_cycles_are_found_through_several_apps() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert cycles(graph) == {frozenset({"a", "b", "c"})}
