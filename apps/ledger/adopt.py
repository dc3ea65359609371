"""``ledger adopt``: bring documents that are in the graph but not in the log (ingested before the
log existed, or left by a crash between the graph write and its entry) under the log.

Each such document gets a ``document.ingested`` entry with its content as the graph holds it now,
by actor ``system:adopt``, so that from then on ``ledger verify --graph`` covers it.
"""

from __future__ import annotations

from django.db import transaction
from neo4j import Driver

from apps.ledger.content import document_subject
from apps.ledger.graph import document_contents, document_ids
from apps.ledger.services import Change, entries_append, subjects_latest

PAGE = 500


def documents_adopt(*, driver: Driver, actor: str = "system:adopt") -> list[str]:
    """Log every graph document whose subject has no entry at all; return their subjects. (A subject
    whose latest entry deleted it is left alone: `ledger verify --graph` reports it, and deleting
    the document again finishes the deletion.)"""
    adopted: list[str] = []
    ids = list(document_ids(driver=driver))
    for start in range(0, len(ids), PAGE):
        contents = document_contents(driver=driver, document_ids=ids[start : start + PAGE])
        subjects = {
            document_id: document_subject(collection=content["collection"], path=content["path"])
            for document_id, content in contents.items()
        }
        latest = subjects_latest(kind="Document", subject_ids=list(subjects.values()))
        changes = [
            Change("document.ingested", "Document", subjects[document_id], None, content, ref=document_id)
            for document_id, content in contents.items()
            if subjects[document_id] not in latest and subjects[document_id] not in adopted
        ]
        with transaction.atomic():
            entries_append(actor=actor, changes=changes)
        adopted += [change.subject_id for change in changes]
    return adopted
