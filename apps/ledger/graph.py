"""The change log and the graph: hashing what the graph holds, and applying the graph writes
that follow entries (``GraphChange``), idempotently and in entry order."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import neo4j.exceptions
from django.utils import timezone
from neo4j import Driver

from apps.graph import cypher
from apps.graph.db import graph_read, graph_write
from apps.ledger.content import (
    Content,
    document_content,
    entity_content,
    relation_content,
    synonym_content,
    text_digest,
)
from apps.ledger.models import GraphChange

logger = logging.getLogger(__name__)

# The statements a GraphChange may name: each applies one logged change and is idempotent.
OPERATIONS = {
    "ENTITY_RENAME": cypher.ENTITY_RENAME,
    "ENTITY_MERGE": cypher.ENTITY_MERGE,
    "ENTITY_UNMERGE": cypher.ENTITY_UNMERGE,
    "ENTITY_DELETE": cypher.ENTITY_DELETE,
    "RELATION_STATUS_SET": cypher.RELATION_STATUS_SET,
    "RELATION_DELETE": cypher.RELATION_DELETE,
    "ENTITY_ALIAS_ADD": cypher.ENTITY_ALIAS_ADD,
    "ENTITY_SPLIT": cypher.ENTITY_SPLIT,
    "RELATION_PREDICATE_SET": cypher.RELATION_PREDICATE_SET,
    "SYNONYM_STATUS_SET": cypher.SYNONYM_STATUS_SET,
}


def _units(pairs: Sequence[Sequence[Any]], *, hashed: bool) -> list[tuple[str, str]]:
    return [
        (str(unit_id), text_digest(value or "") if hashed else str(value or "")) for unit_id, value in pairs if unit_id
    ]


def document_contents(*, driver: Driver, document_ids: Sequence[str]) -> dict[str, Content]:
    """The content (as the log hashes it) of each of these documents the graph holds."""
    found: dict[str, Content] = {}
    for record in graph_read(driver, cypher.DOCUMENT_CONTENTS, ids=list(document_ids)):
        units = [
            *_units(record["chunks"], hashed=True),
            *_units(record["rows"], hashed=True),
            *_units(record["images"], hashed=False),
        ]
        document = dict(record["document"])
        found[str(document["id"])] = document_content(document=document, units=units)
    return found


def document_ids(*, driver: Driver, page: int = 1000) -> Iterator[str]:
    after = ""
    while True:
        ids = [str(record["id"]) for record in graph_read(driver, cypher.DOCUMENT_IDS_PAGE, after=after, limit=page)]
        yield from ids
        if len(ids) < page:
            return
        after = ids[-1]


def entity_contents(*, driver: Driver, entity_ids: Sequence[str]) -> dict[str, Content]:
    return {
        str(record["id"]): entity_content(
            entity_id=str(record["id"]), name=str(record["name"] or ""), type_=str(record["type"] or "")
        )
        for record in graph_read(driver, cypher.ENTITIES_READ, ids=list(entity_ids))
    }


RelationKey = tuple[str, str, str]  # source, predicate, target


def relation_contents(*, driver: Driver, relations: Sequence[RelationKey]) -> dict[RelationKey, Content]:
    rows = [{"source": s, "predicate": p, "target": t} for s, p, t in relations]
    found: dict[RelationKey, Content] = {}
    for record in graph_read(driver, cypher.RELATIONS_READ, rows=rows):
        key = (str(record["source"]), str(record["predicate"]), str(record["target"]))
        found[key] = relation_content(source=key[0], predicate=key[1], target=key[2], status=str(record["status"]))
    return found


def synonym_contents(*, driver: Driver, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Content]:
    """The content of each of these synonym edges (source, target) the graph holds."""
    rows = [{"source": source, "target": target} for source, target in pairs]
    return {
        (str(r["source"]), str(r["target"])): synonym_content(
            source=str(r["source"]), target=str(r["target"]), status=str(r["status"])
        )
        for r in graph_read(driver, cypher.SYNONYMS_READ, rows=rows)
    }


def graph_changes_apply(*, driver: Driver, limit: int = 500) -> tuple[int, int]:
    """Apply the pending graph writes in entry order; return (applied, still pending).

    Stops at the first failure, so a later change never overtakes an earlier one.
    """
    applied = 0
    pending = list(GraphChange.objects.filter(applied_at__isnull=True).order_by("entry_id")[:limit])
    for change in pending:
        statement = OPERATIONS.get(str(change.operation.get("cypher")))
        if statement is None:
            raise ValueError(f"entry {change.entry_id} names an unknown graph operation {change.operation!r}")
        try:
            graph_write(driver, statement, **dict(change.operation.get("params") or {}))
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, OSError) as exc:
            GraphChange.objects.filter(pk=change.pk).update(attempts=change.attempts + 1, error=str(exc)[:2000])
            logger.warning("graph change of entry %s not applied yet: %s", change.entry_id, exc)
            break
        GraphChange.objects.filter(pk=change.pk).update(applied_at=timezone.now(), error="")
        applied += 1
    remaining = GraphChange.objects.filter(applied_at__isnull=True).count()
    return applied, remaining
