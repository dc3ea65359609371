"""Curation of the knowledge graph: every change is a change-log entry first, then a graph write.

Each function reads the subject's current content, appends the entry (with the graph write it
implies, ``GraphChange``) in one database transaction, then applies the pending graph writes.
If Neo4j is away at that moment the change stays pending and is applied on the next call or
anchoring round (``apps.ledger.graph.graph_changes_apply``); the result says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from neo4j import Driver

from apps.curation import undo
from apps.graph import cypher
from apps.graph.db import graph_read
from apps.graph.identity import content_id
from apps.ledger.content import (
    Content,
    entity_content,
    relation_content,
    relation_subject,
    synonym_content,
    synonym_subject,
)
from apps.ledger.graph import entity_contents, graph_changes_apply, relation_contents, synonym_contents
from apps.ledger.models import GraphChange
from apps.ledger.services import Change, entries_append, subjects_latest

MAX_NAME = 300
MAX_PREDICATE = 80
_PREDICATE = re.compile(r"^\w+$")


class CurationError(ValueError):
    """A curation request that cannot be carried out; the message says why."""


@dataclass(frozen=True)
class Curated:
    seq: int  # the change-log entry
    applied: bool  # False: the graph write is pending (Neo4j was unavailable)
    entries: tuple[int, ...] = ()  # every entry of the change, when it wrote more than one
    entity_id: str = ""  # the entity a change created (a split's new entity)


def _entity(driver: Driver, entity_id: str) -> Content:
    found = entity_contents(driver=driver, entity_ids=[entity_id]).get(entity_id)
    if found is None:
        raise CurationError(f"there is no entity {entity_id!r}")
    return found


def _clean_name(name: str) -> str:
    cleaned = " ".join(name.split())
    if not cleaned:
        raise CurationError("a name cannot be empty")
    if len(cleaned) > MAX_NAME:
        raise CurationError(f"a name has at most {MAX_NAME} characters")
    return cleaned


def _commit(*, driver: Driver, actor: str, change: Change) -> Curated:
    return _commit_all(driver=driver, actor=actor, changes=[change])


def _commit_all(
    *, driver: Driver, actor: str, changes: Sequence[Change], main: int = 0, entity_id: str = ""
) -> Curated:
    """Log ``changes`` in one transaction, then apply the pending graph writes; ``main`` is the
    index of the entry the result names."""
    with transaction.atomic():
        entries = entries_append(actor=actor, changes=changes)
    graph_changes_apply(driver=driver)
    seqs = tuple(entry.seq for entry in entries)
    pending = GraphChange.objects.filter(entry_id__in=seqs, applied_at__isnull=True).exists()
    return Curated(seq=seqs[main], applied=not pending, entries=seqs, entity_id=entity_id)


def _operation(cypher: str, **params: Any) -> dict[str, Any]:
    return {"cypher": cypher, "params": params}


def entity_rename(*, driver: Driver, entity_id: str, name: str, actor: str) -> Curated:
    """Give an entity a new name; the old one becomes an alias."""
    before = _entity(driver, entity_id)
    name = _clean_name(name)
    if name == before["name"]:
        raise CurationError(f"the entity is already called {name!r}")
    after = entity_content(entity_id=entity_id, name=name, type_=str(before["type"]))
    operation = _operation("ENTITY_RENAME", id=entity_id, name=name)
    return _commit(
        driver=driver,
        actor=actor,
        change=Change("entity.renamed", "Entity", entity_id, before, after, operation=operation),
    )


def entity_merge(*, driver: Driver, keep: str, drop: str, actor: str) -> Curated:
    """Merge entity ``drop`` into ``keep``: its mentions, relations and names move over, and it goes."""
    if keep == drop:
        raise CurationError("an entity cannot be merged into itself")
    _entity(driver, keep)
    before = _entity(driver, drop)
    after = entity_content(entity_id=drop, name=str(before["name"]), type_=str(before["type"]), merged_into=keep)
    operation = _operation("ENTITY_MERGE", keep=keep, drop=drop)
    recorded = undo.merge_snapshot(driver=driver, keep=keep, drop=drop)
    if recorded is not None:
        operation["undo"] = recorded
    return _commit(
        driver=driver, actor=actor, change=Change(undo.MERGED, "Entity", drop, before, after, operation=operation)
    )


def entity_unmerge(*, driver: Driver, seq: int, actor: str) -> Curated:
    """Undo the log's last merge (entry ``seq``): the merged-away entity comes back with its
    mentions, relations and names, as a new ``entity.unmerged`` entry."""
    merge = undo.last_merge()
    if merge is None or merge.seq != seq:
        raise CurationError(f"only the last merge can be undone, and change-log entry #{seq} is not it")
    if merge.refusal:
        raise CurationError(f"the merge cannot be undone. {merge.refusal}")
    _entity(driver, merge.keep)
    if merge.restored is None:
        raise CurationError(f"change-log entry #{seq} has no content to restore")
    operation = _operation("ENTITY_UNMERGE", **merge.parameters)
    return _commit(
        driver=driver,
        actor=actor,
        change=Change(undo.UNMERGED, "Entity", merge.drop, merge.merged, merge.restored, operation=operation),
    )


def entity_delete(*, driver: Driver, entity_id: str, actor: str) -> Curated:
    """Delete an entity with its mentions and relations (the documents stay)."""
    before = _entity(driver, entity_id)
    operation = _operation("ENTITY_DELETE", id=entity_id)
    return _commit(
        driver=driver,
        actor=actor,
        change=Change("entity.deleted", "Entity", entity_id, before, None, operation=operation),
    )


def _relation(driver: Driver, source: str, predicate: str, target: str) -> Content:
    found = relation_contents(driver=driver, relations=[(source, predicate, target)]).get((source, predicate, target))
    if found is None:
        raise CurationError(f"there is no relation {source!r} -{predicate}-> {target!r}")
    return found


def relation_review(*, driver: Driver, source: str, predicate: str, target: str, approve: bool, actor: str) -> Curated:
    """Approve or reject a relation (rejected relations stay, marked, out of answers)."""
    before = _relation(driver, source, predicate, target)
    status = "approved" if approve else "rejected"
    if before["status"] == status:
        raise CurationError(f"the relation is already {status}")
    after = relation_content(source=source, predicate=predicate, target=target, status=status)
    operation = _operation("RELATION_STATUS_SET", source=source, predicate=predicate, target=target, status=status)
    subject = relation_subject(source=source, predicate=predicate, target=target)
    action = "relation.approved" if approve else "relation.rejected"
    return _commit(
        driver=driver, actor=actor, change=Change(action, "Relation", subject, before, after, operation=operation)
    )


def synonym_review(*, driver: Driver, source: str, target: str, confirm: bool, actor: str) -> Curated:
    """Confirm a synonym edge (the two stay apart, and answers keep crossing the edge) or reject it
    (answers no longer cross it, and ingestion does not suggest it again)."""
    source, target = sorted((source, target))
    before = synonym_contents(driver=driver, pairs=[(source, target)]).get((source, target))
    if before is None:
        raise CurationError(f"there is no synonym edge between {source!r} and {target!r}")
    status = "confirmed" if confirm else "rejected"
    if before["status"] == status:
        raise CurationError(f"the synonym edge is already {status}")
    after = synonym_content(source=source, target=target, status=status)
    operation = _operation("SYNONYM_STATUS_SET", source=source, target=target, status=status)
    action = "synonym.confirmed" if confirm else "synonym.rejected"
    subject = synonym_subject(source=source, target=target)
    return _commit(
        driver=driver, actor=actor, change=Change(action, "Synonym", subject, before, after, operation=operation)
    )


def relation_remove(*, driver: Driver, source: str, predicate: str, target: str, actor: str) -> Curated:
    before = _relation(driver, source, predicate, target)
    operation = _operation("RELATION_DELETE", source=source, predicate=predicate, target=target)
    subject = relation_subject(source=source, predicate=predicate, target=target)
    return _commit(
        driver=driver,
        actor=actor,
        change=Change("relation.removed", "Relation", subject, before, None, operation=operation),
    )


def _clean_predicate(predicate: str) -> str:
    """A predicate as ingestion writes them: words joined by underscores, lowercase."""
    cleaned = "_".join(predicate.split()).casefold()
    if not cleaned:
        raise CurationError("a predicate cannot be empty")
    if len(cleaned) > MAX_PREDICATE:
        raise CurationError(f"a predicate has at most {MAX_PREDICATE} characters")
    if not _PREDICATE.match(cleaned):
        raise CurationError("a predicate is made of letters, digits and underscores")
    return cleaned


def entity_alias_add(*, driver: Driver, entity_id: str, alias: str, actor: str) -> Curated:
    """Give an entity one more alias (searchable, and kept through merges).

    Logged as ``curation.edited`` of the entity; its logged content (id, name, type) is the same
    before and after, the alias itself is in the entry's graph change."""
    before = _entity(driver, entity_id)
    alias = _clean_name(alias)
    [names] = graph_read(driver, cypher.CURATION_ENTITY_NAMES, id=entity_id)
    if alias == names["name"] or alias in names["aliases"]:
        raise CurationError(f"{alias!r} is already a name of the entity")
    operation = _operation("ENTITY_ALIAS_ADD", id=entity_id, alias=alias)
    return _commit(
        driver=driver,
        actor=actor,
        change=Change("curation.edited", "Entity", entity_id, before, dict(before), operation=operation),
    )


def pair_order(*, driver: Driver, first: str, second: str) -> tuple[str, str]:
    """Which of two entities a pair merge keeps (more mentions; ``first`` on a tie): (keep, drop)."""
    counts = {
        str(r["id"]): int(r["mentions"])
        for r in graph_read(driver, cypher.CURATION_MENTION_COUNTS, ids=[first, second])
    }
    for entity_id in (first, second):
        if entity_id not in counts:
            raise CurationError(f"there is no entity {entity_id!r}")
    return (first, second) if counts[first] >= counts[second] else (second, first)


def entity_pair_merge(*, driver: Driver, first: str, second: str, actor: str) -> Curated:
    """Merge two entities, keeping the one with more mentions (``first`` on a tie)."""
    keep, drop = pair_order(driver=driver, first=first, second=second)
    return entity_merge(driver=driver, keep=keep, drop=drop, actor=actor)


def _split_relation_changes(driver: Driver, entity_id: str, documents: list[str]) -> list[Change]:
    """The logged relations a split takes all evidence from: they go, so their subjects end."""
    moved = [
        (str(r["source"]), str(r["predicate"]), str(r["target"]), str(r["status"]))
        for r in graph_read(driver, cypher.CURATION_SPLIT_RELATIONS, id=entity_id, documents=documents)
        if r["moved"]
    ]
    subjects = {relation_subject(source=s, predicate=p, target=t): (s, p, t, status) for s, p, t, status in moved}
    logged = subjects_latest(kind="Relation", subject_ids=list(subjects))
    changes = []
    for subject, (source, predicate, target, status) in subjects.items():
        if logged.get(subject) is not None:
            before = relation_content(source=source, predicate=predicate, target=target, status=status)
            changes.append(Change("curation.edited", "Relation", subject, before, None))
    return changes


def entity_split(*, driver: Driver, entity_id: str, document_ids: Sequence[str], name: str, actor: str) -> Curated:
    """Move the entity's mentions in ``document_ids`` (and its relations' evidence there) to a new
    entity called ``name``, of the same type.

    Logged as ``entity.created`` of the new entity and ``curation.edited`` of the original (the
    move, with its graph change); a logged relation left without evidence ends with its own
    ``curation.edited``. The result names the ``curation.edited`` entry and the new entity."""
    before = _entity(driver, entity_id)
    name = _clean_name(name)
    documents = sorted({str(document) for document in document_ids if document})
    if not documents:
        raise CurationError("choose at least one document whose mentions move to the new entity")
    [counts] = graph_read(driver, cypher.CURATION_SPLIT_COUNTS, id=entity_id, documents=documents)
    if not counts["moving"]:
        raise CurationError("the entity has no mentions in those documents")
    if counts["moving"] == counts["total"]:
        raise CurationError("those documents hold every mention of the entity: rename it instead")
    new_id = content_id("entity-split", entity_id, *documents)
    if entity_contents(driver=driver, entity_ids=[new_id]):
        raise CurationError("this split was made before: its entity exists")
    type_ = str(before["type"])
    created = entity_content(entity_id=new_id, name=name, type_=type_)
    operation = _operation("ENTITY_SPLIT", id=entity_id, new_id=new_id, name=name, type=type_, documents=documents)
    changes = [
        Change("entity.created", "Entity", new_id, None, created),
        Change("curation.edited", "Entity", entity_id, before, dict(before), operation=operation),
        *_split_relation_changes(driver, entity_id, documents),
    ]
    return _commit_all(driver=driver, actor=actor, changes=changes, main=1, entity_id=new_id)


def relation_predicate_set(
    *, driver: Driver, source: str, predicate: str, target: str, new_predicate: str, actor: str
) -> Curated:
    """Give a relation another predicate, keeping its evidence, documents, weight and status.

    The predicate is part of a relation's identity, so this ends one relation and starts another:
    two ``curation.edited`` entries, the old relation's (before, nothing after) and the new one's
    (nothing before, after), the second with the graph change. The result names the first."""
    before = _relation(driver, source, predicate, target)
    new_predicate = _clean_predicate(new_predicate)
    if new_predicate == predicate:
        raise CurationError(f"the relation's predicate is already {predicate!r}")
    if relation_contents(driver=driver, relations=[(source, new_predicate, target)]):
        raise CurationError(f"a relation {new_predicate!r} between these entities exists already: remove one")
    after = relation_content(source=source, predicate=new_predicate, target=target, status=str(before["status"]))
    operation = _operation(
        "RELATION_PREDICATE_SET", source=source, predicate=predicate, target=target, new_predicate=new_predicate
    )
    old_subject = relation_subject(source=source, predicate=predicate, target=target)
    new_subject = relation_subject(source=source, predicate=new_predicate, target=target)
    changes = [
        Change("curation.edited", "Relation", old_subject, before, None),
        Change("curation.edited", "Relation", new_subject, None, after, operation=operation),
    ]
    return _commit_all(driver=driver, actor=actor, changes=changes)
