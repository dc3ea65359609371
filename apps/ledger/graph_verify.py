"""``ledger verify --graph``: the graph holds exactly what the change log says.

For every subject the log knows, its latest entry says what the graph must hold: a document
version with that content hash, a curated entity or relation with that content, or nothing.
A document in the graph that no entry accounts for, or a subject whose graph content hashes
differently, is a change made behind ragkg's back (or a graph write that has not followed its
entry yet, which is reported as such).
"""

from __future__ import annotations

from typing import Any

from neo4j import Driver

from apps.ledger.content import content_hash, document_subject
from apps.ledger.graph import RelationKey, document_contents, document_ids, entity_contents, relation_contents
from apps.ledger.models import ChangeEntry, GraphChange, Snapshot
from apps.ledger.verify import Problem

PAGE = 500


def _latest() -> dict[tuple[str, str], tuple[int, str | None, str | None]]:
    latest: dict[tuple[str, str], tuple[int, str | None, str | None]] = {}
    rows = ChangeEntry.objects.order_by("seq").values_list("subject_kind", "subject_id", "seq", "before", "after")
    for kind, subject, seq, before, after in rows.iterator(chunk_size=5000):
        latest[(kind, subject)] = (seq, before, after)
    return latest


def _documents(
    driver: Driver, latest: dict[tuple[str, str], tuple[int, str | None, str | None]]
) -> tuple[int, list[Problem]]:
    problems: list[Problem] = []
    seen: set[str] = set()
    ids = list(document_ids(driver=driver))
    for start in range(0, len(ids), PAGE):
        for document_id, content in document_contents(driver=driver, document_ids=ids[start : start + PAGE]).items():
            subject = document_subject(collection=content["collection"], path=content["path"])
            logged = latest.get(("Document", subject))
            if logged is None or logged[2] is None or subject in seen:
                problems.append(
                    Problem("graph", f"document {subject} ({document_id}) is in the graph but not in the log")
                )
                continue
            seen.add(subject)
            if content_hash(content) != logged[2]:
                problems.append(
                    Problem("graph", f"document {subject} in the graph differs from entry #{logged[0]}", seq=logged[0])
                )
    for (kind, subject), (seq, _, after) in latest.items():
        if kind == "Document" and after is not None and subject not in seen:
            problems.append(Problem("graph", f"document {subject} of entry #{seq} is missing from the graph", seq=seq))
    return len(ids), problems


def _contents(digests: set[str]) -> dict[str, dict[str, Any]]:
    return {row.sha256: dict(row.content) for row in Snapshot.objects.filter(sha256__in=list(digests))}


def _curated(
    driver: Driver, latest: dict[tuple[str, str], tuple[int, str | None, str | None]]
) -> tuple[int, list[Problem]]:
    problems: list[Problem] = []
    subjects = {key: value for key, value in latest.items() if key[0] in ("Entity", "Relation")}
    contents = _contents({digest for _, before, after in subjects.values() for digest in (before, after) if digest})
    entity_ids = [subject for kind, subject in subjects if kind == "Entity"]
    relations: dict[str, RelationKey] = {}
    for (kind, subject), (_, before, after) in subjects.items():
        if kind == "Relation":
            content = contents.get(after or before or "", {})
            relations[subject] = (str(content.get("source")), str(content.get("predicate")), str(content.get("target")))
    entities = entity_contents(driver=driver, entity_ids=entity_ids)
    found_relations = relation_contents(driver=driver, relations=list(relations.values()))
    removed = {  # entities deleted or merged away: their relations went (or moved) with them
        subject: seq
        for (kind, subject), (seq, _, after) in subjects.items()
        if kind == "Entity" and (after is None or "merged_into" in contents.get(after, {}))
    }
    for (kind, subject), (seq, _, after) in subjects.items():
        if kind == "Relation" and any(
            removed.get(end, -1) > seq for end in (relations[subject][0], relations[subject][2])
        ):
            continue
        expected = contents.get(after) if after else None
        gone = expected is None or "merged_into" in expected
        actual = entities.get(subject) if kind == "Entity" else found_relations.get(relations[subject])
        if gone and actual is not None:
            problems.append(
                Problem("graph", f"{kind.lower()} {subject} is in the graph, but entry #{seq} removed it", seq=seq)
            )
        elif not gone and actual is None:
            problems.append(
                Problem("graph", f"{kind.lower()} {subject} of entry #{seq} is missing from the graph", seq=seq)
            )
        elif not gone and actual is not None and content_hash(actual) != after:
            problems.append(
                Problem("graph", f"{kind.lower()} {subject} in the graph differs from entry #{seq}", seq=seq)
            )
    return len(subjects), problems


def graph_problems(*, driver: Driver) -> tuple[int, list[Problem]]:
    """(subjects checked, problems)."""
    latest = _latest()
    pending = [
        Problem("graph", f"the graph change of entry #{seq} is not applied yet (`manage.py ledger apply`)", seq=seq)
        for seq in GraphChange.objects.filter(applied_at__isnull=True).values_list("entry_id", flat=True)
    ]
    documents, document_problems = _documents(driver, latest)
    curated, curated_problems = _curated(driver, latest)
    return documents + curated, [*pending, *document_problems, *curated_problems]
