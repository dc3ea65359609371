"""Curation of the knowledge graph: every change is a change-log entry first, then a graph write.

Each function reads the subject's current content, appends the entry (with the graph write it
implies, ``GraphChange``) in one database transaction, then applies the pending graph writes.
If Neo4j is away at that moment the change stays pending and is applied on the next call or
anchoring round (``apps.ledger.graph.graph_changes_apply``); the result says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from neo4j import Driver

from apps.ledger.content import Content, entity_content, relation_content, relation_subject
from apps.ledger.graph import entity_contents, graph_changes_apply, relation_contents
from apps.ledger.models import GraphChange
from apps.ledger.services import Change, entries_append

MAX_NAME = 300


class CurationError(ValueError):
    """A curation request that cannot be carried out; the message says why."""


@dataclass(frozen=True)
class Curated:
    seq: int  # the change-log entry
    applied: bool  # False: the graph write is pending (Neo4j was unavailable)


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
    with transaction.atomic():
        [entry] = entries_append(actor=actor, changes=[change])
    graph_changes_apply(driver=driver)
    pending = GraphChange.objects.filter(entry_id=entry.seq, applied_at__isnull=True).exists()
    return Curated(seq=entry.seq, applied=not pending)


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
    return _commit(
        driver=driver, actor=actor, change=Change("entity.merged", "Entity", drop, before, after, operation=operation)
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


def relation_remove(*, driver: Driver, source: str, predicate: str, target: str, actor: str) -> Curated:
    before = _relation(driver, source, predicate, target)
    operation = _operation("RELATION_DELETE", source=source, predicate=predicate, target=target)
    subject = relation_subject(source=source, predicate=predicate, target=target)
    return _commit(
        driver=driver,
        actor=actor,
        change=Change("relation.removed", "Relation", subject, before, None, operation=operation),
    )
