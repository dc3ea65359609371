"""No Cypher is built from user values: a static scan of the code, and the builders' allow-lists.

Every query the app sends is a constant of the apps/graph/cypher package (or, for the benchmarks,
benchmarks/cypher.py) or one of their few builders, and
user values travel as parameters ($name). Labels, relationship types and property names cannot
be parameters in Cypher, so the builders that put them into the text take them from allow-lists
and refuse anything else; the scan keeps new code from interpolating anything into a query."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.graph import cypher
from benchmarks import cypher as bench_cypher

ROOT = Path(__file__).resolve().parents[3]
# The modules that hold Cypher text: the only ones allowed to format it.
CYPHER = (*sorted((ROOT / "apps" / "graph" / "cypher").glob("*.py")), ROOT / "benchmarks" / "cypher.py")
SCANNED = ("apps", "ragkg", "scripts", "benchmarks")
CLAUSE = re.compile(r"\b(MATCH|MERGE|CREATE|DELETE|DETACH|DROP|RETURN|UNWIND|SET|REMOVE|CALL|WHERE|LOAD CSV)\b")
# The builders of the Cypher modules that interpolate into query text, and what they interpolate.
BUILDERS = {
    "mentions_create",
    "vector_units_page",
    "vector_units_by_id",
    "vector_bench_index_create",
    "restore_nodes",
    "restore_relationships",
}
# Module-level f-strings and concatenations of the Cypher modules: built from literals and the
# shared fragments of apps/graph/cypher/common.py at import, no input involved.
CONSTANT_FSTRINGS = {
    "SCHEMA_CONSTRAINTS",
    "VECTOR_BENCH_INDEX_DROP",
    "CURATION_ENTITY_RELATIONS",
    "CURATION_RELATIONS_PAGE",
    "CURATION_RELATION_READABLE",
    "GRAPH_NEIGHBOURS",
    "GRAPH_EDGES",
    "GRAPH_PATH_PREDICATES",
    "RELATION_EVIDENCE",
    "RELATION_MOVE",
    "ENTITY_MERGE",
    "ENTITY_UNMERGE",
    "ENTITY_SPLIT",
    "RELATION_PREDICATE_SET",
    "DOCUMENT_RELATIONS_RELEASE",
    "SUPPORT_LISTS_CONVERT",
}
# The shared fragments (constants of the Cypher modules) those may join in.
FRAGMENTS = {
    "UNIT_OF_ID",
    "RELATION_SUPPORTED",
    "RELATION_READABLE",
    "RELATION_DOCUMENTS",
    "RELATION_WEIGHT_SET",
    "RELATION_EVIDENCE",
    "RELATION_MOVE",
}
HOSTILE = [
    "x' }) MATCH (n) DETACH DELETE n //",
    "Chunk {id: 1}) DETACH DELETE u //",
    '" OR 1=1',
    "`Chunk`",
    "Chunk`) MATCH (n) DETACH DELETE n //",
    "$rows",
    "chunk",
    "Ch\u0075nk\u200b",
    "Chunk" * 1000,
]


def python_files() -> Iterator[Path]:
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "migrations" not in path.parts and "node_modules" not in path.parts:
                yield path


def literal_text(node: ast.JoinedStr) -> str:
    return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))


def formats_cypher(node: ast.AST) -> bool:
    """An f-string, %-format or .format() whose literal text reads like Cypher."""
    if isinstance(node, ast.JoinedStr):
        return bool(CLAUSE.search(literal_text(node)))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.Add):
        return any(
            isinstance(side, ast.Constant) and isinstance(side.value, str) and CLAUSE.search(side.value)
            for side in (node.left, node.right)
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        target = node.func.value
        return isinstance(target, ast.Constant) and isinstance(target.value, str) and bool(CLAUSE.search(target.value))
    return False


def test_no_cypher_is_formatted_outside_the_cypher_modules() -> None:
    found = []
    for path in python_files():
        if path in CYPHER:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if formats_cypher(node):
                found.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}: {ast.unparse(node)[:80]}")
    assert found == []


def test_queries_are_sent_as_constants_builders_or_passed_statements() -> None:
    """The first argument of every execute_query/run is never formatted text."""
    found = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
                continue
            if node.func.attr in ("execute_query", "run") and isinstance(node.args[0], ast.JoinedStr | ast.BinOp):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)[:80]}")
    assert found == []


def interpolating_scopes() -> dict[str, ast.AST]:
    """Each top-level function or assignment of the Cypher modules that formats Cypher text."""
    scopes: dict[str, ast.AST] = {}
    for node in (node for path in CYPHER for node in ast.parse(path.read_text()).body):
        if not any(formats_cypher(inner) for inner in ast.walk(node)):
            continue
        if isinstance(node, ast.FunctionDef):
            scopes[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            scopes[ast.unparse(target)] = node
    return scopes


def test_the_cypher_modules_interpolate_only_in_their_allow_listed_builders() -> None:
    scopes = interpolating_scopes()
    assert set(scopes) <= BUILDERS | CONSTANT_FSTRINGS, "a new f-string in a Cypher module: allow-list its input"
    for name in CONSTANT_FSTRINGS & set(scopes):
        values: list[ast.expr] = [v for v in ast.walk(scopes[name]) if isinstance(v, ast.FormattedValue)]
        values += [side for v in ast.walk(scopes[name]) if isinstance(v, ast.BinOp) for side in (v.left, v.right)]
        names = {n.id for v in values for n in ast.walk(v) if isinstance(n, ast.Name)}
        assert names <= {"label", "VECTOR_BENCH_INDEX"} | FRAGMENTS, name


def test_every_builder_refuses_its_input_before_formatting() -> None:
    """Each builder's body raises ValueError on a value outside its allow-list (checked below)."""
    for name in BUILDERS:
        node = interpolating_scopes()[name]
        source = ast.unparse(node)
        assert "raise ValueError" in source or "_vector_unit_parts(" in source, name


@pytest.mark.parametrize("label", [label for label in HOSTILE if label != "chunk"])  # "chunk" is a plain name
def test_restored_labels_and_types_must_be_plain_identifiers(label: str) -> None:
    with pytest.raises(ValueError):
        cypher.restore_nodes(("Chunk", label))
    with pytest.raises(ValueError):
        cypher.restore_relationships(label)


@pytest.mark.parametrize("label", HOSTILE)
def test_mention_labels_come_from_the_allow_list(label: str) -> None:
    with pytest.raises(ValueError):
        cypher.mentions_create(label)


@pytest.mark.parametrize("value", HOSTILE)
def test_vector_unit_labels_and_properties_come_from_the_allow_list(value: str) -> None:
    for builder in (
        cypher.vector_units_by_id,
        lambda label, prop: cypher.vector_units_page(label, prop, with_content=True),
    ):
        with pytest.raises(ValueError):
            builder(value, "text")
        with pytest.raises(ValueError):
            builder("Chunk", value)


@pytest.mark.parametrize("dimensions", ["4) DETACH DELETE n //", "384 }", -1, 0, 10**9, "1e3"])
def test_the_vector_index_dimension_is_a_bounded_integer(dimensions: object) -> None:
    with pytest.raises(ValueError):
        bench_cypher.vector_bench_index_create(dimensions)  # type: ignore[arg-type]


def test_the_allowed_builders_build_what_they_should() -> None:
    assert "MATCH (u:Chunk {id: row.unit})" in cypher.mentions_create("Chunk")
    assert "u.text AS content" in cypher.vector_units_by_id("Chunk", "text")
    assert "`vector.dimensions`: 384" in bench_cypher.vector_bench_index_create(384)


@pytest.mark.parametrize(
    "source",
    [
        "f\"MATCH (n {{name: '{name}'}}) RETURN n\"",
        "\"MATCH (n) WHERE n.name = '%s' RETURN n\" % name",
        '"MATCH (n:" + label + ") RETURN n"',
        "\"MERGE (e:Entity {{name: '{}'}})\".format(name)",
    ],
)
def test_the_scan_catches_formatted_cypher(source: str) -> None:
    assert formats_cypher(ast.parse(source, mode="eval").body)


def test_the_scan_lets_plain_messages_through() -> None:
    assert not formats_cypher(ast.parse('f"there is no entity {entity_id!r}"', mode="eval").body)
