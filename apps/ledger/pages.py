"""What the change-log audit pages show: the filtered log with its tree head, one entry with the
diff of its contents and its proof, the chain anchors, a "verify now" run that never raises for
a chain or a graph that is down, and the knowledge-log box of an answer's audit page.

Who sees which entry: a Document entry's subject is "<collection>/<path>", and a viewer who cannot
read that collection (apps.accounts.access) does not see the entry: it is left out of the list, its
page and proof are 404s, and a "verify now" problem about it is told without its details. Other
subjects (entities, relations) are shown to every auditor."""

from __future__ import annotations

import datetime
import json
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import neo4j.exceptions
from django.core.paginator import Page, Paginator
from django.db.models import Q, QuerySet, Value
from django.db.models.functions import Greatest, StrIndex, Substr

from apps.ledger.canonical import CanonicalError, entry_bytes
from apps.ledger.chain import Chain, ChainError, chain_from_settings
from apps.ledger.merkle import leaf_hash
from apps.ledger.models import Anchor, ChangeEntry
from apps.ledger.proofs import covering_anchor, proof_bundle
from apps.ledger.services import LedgerError, snapshot, tree_head
from apps.ledger.verify import Problem, Report, log_verify

logger = logging.getLogger(__name__)

PAGE_SIZE = 50
UNIT_IDS_SHOWN = 20  # per kind of unit change (added, removed, changed); the rest is counted
GRAPH_DOWN = "the knowledge graph is unavailable: the graph was not checked"
GRAPH_ERRORS = (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError, OSError)


# --- the log ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogFilters:
    """The log page's filters; empty values filter nothing, dates (UTC) are inclusive."""

    subject: str = ""
    actor: str = ""
    action: str = ""
    date_from: datetime.date | None = None
    date_to: datetime.date | None = None


DOCUMENT = "Document"
HIDDEN_PROBLEM = "a problem with an entry about a collection you cannot read (an admin sees its details)"


def entries_visible(readable: Collection[str] | None) -> QuerySet[ChangeEntry]:
    """The entries a viewer who can read ``readable`` (None: everything) may see: every entry but
    the Document entries of other collections (the collection is the subject up to its first "/";
    compared exactly, so case counts on SQLite too)."""
    entries = ChangeEntry.objects.all()
    if readable is None:
        return entries
    collection = Substr("subject_id", 1, Greatest(StrIndex("subject_id", Value("/")) - 1, Value(0)))
    return entries.annotate(subject_collection=collection).filter(
        ~Q(subject_kind=DOCUMENT) | Q(subject_collection__in=list(readable))
    )


def _filtered(filters: LogFilters, readable: Collection[str] | None) -> QuerySet[ChangeEntry]:
    entries = entries_visible(readable)
    if filters.subject:
        entries = entries.filter(subject_id__icontains=filters.subject)
    if filters.actor:
        entries = entries.filter(actor__icontains=filters.actor)
    if filters.action:
        entries = entries.filter(action=filters.action)
    # ``time`` is RFC 3339 UTC text, so dates compare as text: "2024-03-10" <= "2024-03-10T…" < "2024-03-11".
    if filters.date_from:
        entries = entries.filter(time__gte=filters.date_from.isoformat())
    if filters.date_to:
        entries = entries.filter(time__lt=(filters.date_to + datetime.timedelta(days=1)).isoformat())
    return entries.order_by("-seq")


def latest_anchor() -> Anchor | None:
    """The confirmed anchor of the largest tree: every entry below its size is anchored."""
    return Anchor.objects.filter(state=Anchor.CONFIRMED).order_by("-tree_size", "-created_at").first()


def log_head() -> dict[str, Any]:
    """The header of the log page: the tree head now and the latest confirmed anchor."""
    return {"head": tree_head(), "anchor": latest_anchor()}


def log_page(
    *, filters: LogFilters, page: str | int | None, anchored_size: int, readable: Collection[str] | None
) -> tuple[Page[Any], list[Any]]:
    """One page of the entries that pass ``filters`` and that a viewer who can read ``readable`` may
    see, newest first, each with whether it is anchored (within the first ``anchored_size`` entries)."""
    entry_page: Page[Any] = Paginator(_filtered(filters, readable), PAGE_SIZE).get_page(page)
    return entry_page, [{"entry": row, "anchored": row.seq < anchored_size} for row in entry_page.object_list]


# --- one entry ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class UnitChanges:
    """What changed in a document's units, by unit id; each list cut at UNIT_IDS_SHOWN."""

    added: list[str]
    removed: list[str]
    changed: list[str]
    more: dict[str, int] = field(default_factory=dict)  # how many ids each list leaves out


@dataclass(frozen=True)
class FieldDiff:
    key: str
    before: str
    after: str
    changed: bool
    units: UnitChanges | None = None


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _cut(ids: list[str]) -> tuple[list[str], int]:
    ids = sorted(ids)
    return ids[:UNIT_IDS_SHOWN], max(0, len(ids) - UNIT_IDS_SHOWN)


def _units(value: Any) -> dict[str, str]:
    return {str(unit[0]): str(unit[1]) for unit in value or [] if isinstance(unit, list | tuple) and len(unit) == 2}


def _units_diff(before: Any, after: Any, *, present: tuple[bool, bool]) -> FieldDiff:
    """A document's unit list as counts, and the ids of the units added, removed or changed."""
    old, new = _units(before), _units(after)
    lists = {
        "added": [unit for unit in new if unit not in old],
        "removed": [unit for unit in old if unit not in new],
        "changed": [unit for unit in new if unit in old and old[unit] != new[unit]],
    }
    cut = {name: _cut(ids) for name, ids in lists.items()}
    changes = UnitChanges(
        added=cut["added"][0],
        removed=cut["removed"][0],
        changed=cut["changed"][0],
        more={name: more for name, (_, more) in cut.items() if more},
    )
    return FieldDiff(
        key="units",
        before=f"{len(old)} unit{'' if len(old) == 1 else 's'}" if present[0] else "—",
        after=f"{len(new)} unit{'' if len(new) == 1 else 's'}" if present[1] else "—",
        changed=present[0] != present[1] or any(lists.values()),
        units=changes,
    )


def content_diff(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[FieldDiff]:
    """Field by field: each key of either content with its value before and after ("—": absent),
    and whether it changed. A Document's ``units`` are summarised (see ``_units_diff``)."""
    old, new = before or {}, after or {}
    keys = [*old, *(key for key in new if key not in old)]
    document = "Document" in (old.get("kind"), new.get("kind"))
    rows: list[FieldDiff] = []
    for key in keys:
        present = (key in old, key in new)
        if document and key == "units":
            rows.append(_units_diff(old.get(key), new.get(key), present=present))
            continue
        old_value, new_value = (_shown(side[key]) if key in side else "—" for side in (old, new))
        changed = present[0] != present[1] or old.get(key) != new.get(key)
        rows.append(FieldDiff(key, old_value, new_value, changed=changed))
    return rows


def _side(digest: str | None, content: Mapping[str, Any] | None, *, absent: str) -> str:
    if digest is None:
        return absent
    return "content not stored" if content is None else ""


def _neighbours(row: ChangeEntry) -> tuple[ChangeEntry | None, ChangeEntry | None]:
    """The entries of the same subject just before and just after this one."""
    same = ChangeEntry.objects.filter(subject_kind=row.subject_kind, subject_id=row.subject_id)
    return same.filter(seq__lt=row.seq).order_by("-seq").first(), same.filter(seq__gt=row.seq).order_by("seq").first()


def _proof(seq: int) -> dict[str, Any]:
    try:
        bundle = proof_bundle(seq)
    except (LedgerError, CanonicalError) as exc:
        return {"bundle": None, "anchor": None, "error": str(exc)}
    return {"bundle": bundle, "anchor": covering_anchor(seq), "error": ""}


def entry_page_context(row: ChangeEntry) -> dict[str, Any]:
    """The template context of one entry's page."""
    try:
        canonical = entry_bytes(row.entry())
    except CanonicalError as exc:
        canonical_text, canonical_error, leaf_matches = "", f"{exc}: the row was changed", False
    else:
        canonical_text, canonical_error = canonical.decode("utf-8"), ""
        leaf_matches = leaf_hash(canonical).hex() == row.leaf_hash
    before, after = snapshot(row.before), snapshot(row.after)
    previous, following = _neighbours(row)
    return {
        "entry": row,
        "canonical": canonical_text,
        "canonical_error": canonical_error,
        "leaf_matches": leaf_matches,
        "before_note": _side(row.before, before, absent="did not exist"),
        "after_note": _side(row.after, after, absent="no longer exists"),
        "diff": content_diff(before, after),
        "previous": previous,
        "next": following,
        "document_id": row.ref if row.subject_kind == "Document" else "",
        **_proof(row.seq),
    }


def entry_proof_bundle(seq: int) -> dict[str, Any]:
    """The proof bundle of the entry, or LedgerError saying why there is none (also for a row
    that lost its canonical form)."""
    try:
        return proof_bundle(seq)
    except CanonicalError as exc:
        raise LedgerError(f"entry #{seq} has no canonical form ({exc}): the row was changed") from None


# --- anchors -------------------------------------------------------------------------------------


def anchors_page(*, page: str | int | None) -> Page[Any]:
    """One page of the anchors, largest tree first."""
    return Paginator(Anchor.objects.order_by("-tree_size", "-created_at"), PAGE_SIZE).get_page(page)


# --- verify now -----------------------------------------------------------------------------------


def _verified(chain: Chain | None, *, graph: bool) -> Report:
    if not graph:
        return log_verify(chain=chain)
    from apps.graph.driver import get_driver

    try:
        return log_verify(chain=chain, driver=get_driver())
    except GRAPH_ERRORS:
        logger.warning("verify now: the knowledge graph is unavailable", exc_info=True)
    report = log_verify(chain=chain)
    report.problems.append(Problem("graph", GRAPH_DOWN))
    return report


def _problem_visible(problem: Problem, visible_seqs: set[int], readable: Collection[str]) -> bool:
    if problem.seq is not None:
        return problem.seq in visible_seqs
    if problem.kind == "graph" and problem.message.startswith("document "):  # "document <collection>/<path> …"
        return problem.message.removeprefix("document ").split("/", 1)[0] in readable
    return True


def report_for_reader(report: Report, readable: Collection[str] | None) -> Report:
    """The report as a viewer who can read ``readable`` (None: everything) sees it: a problem about
    an entry they may not see, or about a document of a collection they cannot read, is told without
    its details (still counted: the log's size is no secret)."""
    if readable is None or not report.problems:
        return report
    seqs = {problem.seq for problem in report.problems if problem.seq is not None}
    visible = set(entries_visible(readable).filter(seq__in=seqs).values_list("seq", flat=True))
    problems = [
        problem if _problem_visible(problem, visible, readable) else replace(problem, message=HIDDEN_PROBLEM, seq=None)
        for problem in report.problems
    ]
    return replace(report, problems=problems)


def log_check(*, graph: bool) -> Report:
    """``log_verify`` against the configured chain, and the graph when ``graph``. A chain that cannot
    be set up or reached and a graph that is down become problems of the report: this never raises
    for them."""
    try:
        chain: Chain | None = chain_from_settings(read_only=True)
        setup: list[Problem] = []
    except ChainError as exc:
        chain, setup = None, [Problem("chain", f"the anchors could not be checked: {exc}")]
    report = _verified(chain, graph=graph)
    report.problems.extend(setup)
    return report


# --- an answer's place in the log --------------------------------------------------------------------


def answer_knowledge_log(*, ledger: Mapping[str, Any], sources: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """What the answer stood on (``Answer.ledger``): the tree size, and per source document its name
    and the entry that put its version in the knowledge base (None: the log does not know it).
    None for an answer older than the log."""
    if not ledger:
        return None
    names: dict[str, str] = {}
    for source in sources:
        if source.get("document_id"):
            names.setdefault(str(source["document_id"]), str(source.get("document") or ""))
    logged = ledger.get("sources") or {}
    documents = []
    for document_id in [*names, *(key for key in logged if key not in names)]:
        seq = (logged.get(document_id) or {}).get("seq")
        documents.append({"document_id": document_id, "document": names.get(document_id, ""), "seq": seq})
    return {"tree_size": ledger.get("tree_size"), "documents": documents}
