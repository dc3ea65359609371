"""``ledger verify``: does the change log hold what was logged, and does the chain agree?

* entries: dense sequence numbers, and each row's fields still hash to its stored leaf hash;
* snapshots: each stored content still hashes to its key;
* stored subtrees (the cache tree heads and proofs are read from): each equals the subtree of the
  recomputed leaves, none is missing or extra;
* anchors: for every anchored head the chain's ``rootAt(size)`` equals the root recomputed from
  the entries' fields, and successive anchored heads are consistent (RFC 9162 consistency
  proofs, checked against the roots on chain): the log only ever grew;
* ``--graph``: the graph holds what the log says (documents' content, curated entities and
  relations), nothing less and nothing more.

Problems are listed in log order; the first one is what a user needs to see first.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from neo4j import Driver

from apps.ledger import merkle, subtrees
from apps.ledger.canonical import CanonicalError, entry_bytes
from apps.ledger.chain import Chain, ChainError
from apps.ledger.content import content_hash
from apps.ledger.models import Anchor, ChangeEntry, MerkleNode, Snapshot


@dataclass(frozen=True)
class Problem:
    kind: str  # entry | snapshot | tree | anchor | chain | graph
    message: str
    seq: int | None = None  # the entry it concerns, when one is known
    tree_size: int | None = None  # the anchor it concerns


@dataclass
class Report:
    entries: int = 0
    root: str = ""
    anchors_checked: int = 0
    graph_checked: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        first = self.problems[0] if self.problems else None
        return {
            "ok": self.ok,
            "entries": self.entries,
            "root": self.root,
            "anchors_checked": self.anchors_checked,
            "graph_checked": self.graph_checked,
            "first_problem": asdict(first) if first else None,
            "problems": [asdict(problem) for problem in self.problems],
        }


def _entries(report: Report) -> list[bytes]:
    """The leaf hashes recomputed from the rows' fields (not the stored ones)."""
    leaves: list[bytes] = []
    for row in ChangeEntry.objects.order_by("seq").iterator(chunk_size=2000):
        while len(leaves) < row.seq:
            report.problems.append(
                Problem("entry", f"entry #{len(leaves)} is missing: the log jumps to #{row.seq}", seq=len(leaves))
            )
            leaves.append(b"\x00" * 32)  # keep later entries at their index
        try:
            leaf = merkle.leaf_hash(entry_bytes(row.entry()))
        except CanonicalError as exc:
            report.problems.append(
                Problem("entry", f"entry #{row.seq} has no canonical form ({exc}): the row was changed", seq=row.seq)
            )
            leaves.append(b"\x00" * 32)
            continue
        if leaf.hex() != row.leaf_hash:
            report.problems.append(
                Problem("entry", f"entry #{row.seq} no longer matches its leaf hash: the row was changed", seq=row.seq)
            )
        leaves.append(leaf)
    report.entries = len(leaves)
    report.root = merkle.root(leaves).hex()
    return leaves


def _snapshots(report: Report) -> None:
    for row in Snapshot.objects.iterator(chunk_size=2000):
        if content_hash(row.content) != row.sha256:
            report.problems.append(Problem("snapshot", f"the content stored under {row.sha256} was changed"))


def _span(key: subtrees.Key) -> str:
    level, index = key
    return f"entries #{index << level} to #{((index + 1) << level) - 1}"


def _subtrees(report: Report, leaves: list[bytes]) -> None:
    """The stored subtrees against the tree of the recomputed leaves (the store is not trusted)."""
    expected = {key: value.hex() for key, value in subtrees.all_nodes(leaves).items()}
    wrong: list[subtrees.Key] = []
    for level, index, value in MerkleNode.objects.values_list("level", "index", "hash").iterator(chunk_size=5000):
        if expected.pop((level, index), None) != value:
            wrong.append((level, index))
    if wrong:
        first = min(wrong, key=lambda key: (key[1] << key[0], key[0]))
        report.problems.append(
            Problem(
                "tree",
                f"{len(wrong)} stored subtree hash(es) disagree with the entries (the first over {_span(first)}): "
                "tree heads and proofs read them; once the entries are found right, `manage.py ledger retree` "
                "stores them again",
            )
        )
    if expected:
        first = min(expected, key=lambda key: (key[1] << key[0], key[0]))
        report.problems.append(
            Problem(
                "tree",
                f"{len(expected)} stored subtree hash(es) are missing (the first over {_span(first)}): "
                "tree heads and proofs read every entry instead; `manage.py ledger retree` stores them again",
            )
        )


def _anchors(report: Report, leaves: list[bytes], chain: Chain) -> None:
    anchors = list(Anchor.objects.filter(state=Anchor.CONFIRMED).order_by("tree_size", "created_at"))
    previous: tuple[int, bytes] | None = None
    for anchor in anchors:
        size = anchor.tree_size
        on_chain = chain.root_at(contract=anchor.contract, tree_size=size)
        report.anchors_checked += 1
        if on_chain is None:
            report.problems.append(Problem("anchor", f"the chain holds no root for size {size}", tree_size=size))
            continue
        if on_chain != anchor.root:
            report.problems.append(
                Problem("anchor", f"the anchor record of size {size} differs from the chain", tree_size=size)
            )
        if size > len(leaves):
            report.problems.append(
                Problem(
                    "anchor",
                    f"the chain anchors {size} entries but the log has {len(leaves)}: entries were removed",
                    seq=len(leaves),
                    tree_size=size,
                )
            )
            continue
        if merkle.root(leaves[:size]).hex() != on_chain:
            low = previous[0] if previous else 0
            report.problems.append(
                Problem(
                    "anchor",
                    f"the entries up to size {size} do not give the root anchored on chain: "
                    f"an entry between #{low} and #{size - 1} was changed",
                    tree_size=size,
                )
            )
        root = bytes.fromhex(on_chain)
        if previous is not None and previous[0] < size:
            proof = merkle.consistency_proof(previous[0], leaves[:size])
            if not merkle.verify_consistency(previous[0], size, proof, previous[1], root):
                report.problems.append(
                    Problem(
                        "anchor",
                        f"the anchored heads of size {previous[0]} and {size} are not consistent",
                        tree_size=size,
                    )
                )
        previous = (size, root)


def _order(problem: Problem) -> tuple[int, int, int]:
    """Problems naming an entry first, in log order; then the others by the anchor they concern; the
    stored subtrees (a cache) last."""
    group = 0 if problem.seq is not None else 2 if problem.kind == "tree" else 1
    return (group, problem.seq or 0, problem.tree_size or 0)


def log_verify(*, chain: Chain | None, driver: Driver | None = None) -> Report:
    """Verify the log; the chain part when ``chain`` is given, the graph part when ``driver`` is."""
    report = Report()
    leaves = _entries(report)
    _snapshots(report)
    _subtrees(report, leaves)
    if chain is not None:
        try:
            _anchors(report, leaves, chain)
        except ChainError as exc:
            report.problems.append(Problem("chain", f"the anchors could not be checked: {exc}"))
    if driver is not None:
        from apps.ledger.graph_verify import graph_problems

        report.graph_checked, problems = graph_problems(driver=driver)
        report.problems.extend(problems)
    report.problems.sort(key=_order)
    return report
