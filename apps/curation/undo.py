"""Undoing the last merge through the change log.

A merge records, next to its graph write (``GraphChange.operation["undo"]``), what undoing it
needs: the merged-away entity's properties, mentions, relations and synonym edges as they were,
and what the merge added to the kept entity. Only the last merge of the log can be undone, and
only while neither entity has a later entry; the undo is a new ``entity.unmerged`` entry whose
graph write (``ENTITY_UNMERGE``) brings the entity back — nothing is deleted from the log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from neo4j import Driver

from apps.graph import cypher
from apps.graph.db import graph_read
from apps.ledger.models import ChangeEntry, GraphChange
from apps.ledger.services import snapshot

MERGED = "entity.merged"
UNMERGED = "entity.unmerged"
MAX_UNDO_MENTIONS = 10_000  # a merge moving more mentions records no undo (the entry stays small)
UNIT_LABELS = ("Chunk", "Row", "Image")


def merge_snapshot(*, driver: Driver, keep: str, drop: str) -> dict[str, Any] | None:
    """The parameters of ``ENTITY_UNMERGE`` that undo merging ``drop`` into ``keep`` as the graph
    stands now; None when either entity is missing or the merge is too large to record."""
    records = graph_read(driver, cypher.ENTITY_MERGE_SNAPSHOT, keep=keep, drop=drop)
    if not records or len(records[0]["mentions"]) > MAX_UNDO_MENTIONS:
        return None
    record = records[0]
    properties = dict(record["properties"])
    vector = properties.pop("name_vector", None)
    names = [str(properties.get("name") or ""), *(properties.get("aliases") or [])]
    keep_aliases = list(record["keep_aliases"] or [])
    mentions: dict[str, list[dict[str, Any]]] = {label: [] for label in UNIT_LABELS}
    for mention in record["mentions"]:
        if mention["label"] in mentions:
            mentions[mention["label"]].append({"unit": mention["unit"], "properties": dict(mention["properties"])})
    return {
        "keep": keep,
        "drop": drop,
        "properties": properties,
        "vector": [float(x) for x in vector] if vector is not None else None,
        "keep_aliases_added": [a for a in dict.fromkeys(names) if a != record["keep_name"] and a not in keep_aliases],
        "mentions": mentions,
        "relations": [dict(relation) for relation in record["relations"]],
        "synonyms": [dict(synonym) for synonym in record["synonyms"]],
    }


@dataclass(frozen=True)
class LastMerge:
    """The log's last merge, and why it cannot be undone ("" when it can)."""

    seq: int
    time: str
    actor: str
    keep: str
    drop: str
    drop_name: str
    refusal: str
    undone_by: int | None  # the entry that undid it
    merged: str | None  # the merge entry's after: the hash the undo starts from
    restored: dict[str, Any] | None  # the merged-away entity's logged content (the entry's before)
    parameters: dict[str, Any]  # the recorded ``ENTITY_UNMERGE`` parameters ({} when none)

    @property
    def when(self) -> str:
        """The merge's time to the second, for people."""
        return f"{self.time[:19].replace('T', ' ')} UTC"


def _refusal(entry: ChangeEntry, change: GraphChange | None, keep: str, drop: str) -> tuple[str, int | None]:
    later = (
        ChangeEntry.objects.filter(seq__gt=entry.seq, subject_kind="Entity", subject_id__in=[keep, drop])
        .order_by("seq")
        .first()
    )
    if later is not None and later.action == UNMERGED and later.subject_id == drop:
        return f"It was undone by change-log entry #{later.seq}.", later.seq
    if later is not None:
        return f"An entity of it changed after the merge (change-log entry #{later.seq}, {later.action}).", None
    if change is None or "undo" not in change.operation:
        return "The merge recorded no undo (it was too large, or made before merges could be undone).", None
    if "keep_documents_added" in change.operation["undo"]:
        return "The merge was recorded while support was kept in lists (before evidence edges): no undo.", None
    if change.applied_at is None:
        return "The merge has not reached the graph yet.", None
    return "", None


def last_merge() -> LastMerge | None:
    """The change log's most recent merge, or None when there has been none."""
    entry = ChangeEntry.objects.filter(action=MERGED).order_by("-seq").first()
    if entry is None:
        return None
    change = GraphChange.objects.filter(entry=entry).first()
    operation = change.operation if change is not None else {}
    params = dict(operation.get("params") or {})
    restored = snapshot(entry.before)
    keep, drop = str(params.get("keep", "")), entry.subject_id
    refusal, undone_by = _refusal(entry, change, keep, drop)
    return LastMerge(
        seq=entry.seq,
        time=entry.time,
        actor=entry.actor,
        keep=keep,
        drop=drop,
        drop_name=str((restored or {}).get("name", drop)),
        refusal=refusal,
        undone_by=undone_by,
        merged=entry.after,
        restored=restored,
        parameters=dict(operation.get("undo") or {}),
    )
