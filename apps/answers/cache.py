"""The answer cache, kept honest by the change log.

A question asked again (the same text once normalised, the same readable collections, mode and
generation choice, and the same models and retrieval settings) is answered from the last finished
answer to it, while no change-log entry that touches those collections has been appended since that
answer started: an entry of a document in one of them, or any entity or relation entry (those are
shared by every collection). The first such entry makes it stale. The asker gets an ``Answer`` row of
their own, a copy of the cached one (its sources, text, citations, token provenance and the log
position it stood on), marked with the answer it came from.

Two things make the log a safe signal. The log position is read *before* retrieval starts, so any
entry appended while an answer is being worked out is "since" it. And an answer is only put in the
cache when no touching entry was appended within ``ANSWER_CACHE_SETTLE_SECONDS`` before it started:
a change's log entry can precede the graph and vector writes that carry it out (curation writes the
entry first) or other hosts' vector copies (docs/vectors.md), and an answer worked out in that
window may not see it yet. Rows live in the shared database, so every host uses one cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import uuid
from dataclasses import asdict
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from apps.answers.models import Answer
from apps.answers.pipeline import RetrievalParams
from apps.answers.scope import Scope, scope_names
from apps.ledger.models import LedgerHead
from apps.ledger.pages import entries_visible
from apps.provenance.models import AttributionRecord

logger = logging.getLogger(__name__)

_TRAILING = re.compile(r"[\s?.!]+$")


def question_normal(question: str) -> str:
    """The question as the cache compares it: case-folded, spaces collapsed, no closing ? . !"""
    return _TRAILING.sub("", " ".join(question.split()).casefold())


def cache_key(
    *, question: str, collections: Scope, mode: str, generate: bool, models: dict[str, str], params: RetrievalParams
) -> str:
    """What an answer depends on besides the knowledge itself, as one SHA-256."""
    described = {
        "question": question_normal(question),
        "collections": scope_names(collections),
        "mode": mode,
        "generate": generate,
        "models": models,
        "params": asdict(params),
        "evidence": [
            settings.ANSWER_MIN_SIMILARITY,
            settings.ANSWER_MIN_COVERAGE,
            settings.ANSWER_MIN_EVIDENCE,
            settings.ANSWER_COVERAGE_WEIGHT,
            settings.ANSWER_MIN_ANSWER_SUPPORT,
        ],
        "max_new_tokens": settings.ANSWER_MAX_NEW_TOKENS,
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode()).hexdigest()


def log_position() -> int:
    """The sequence number the next change-log entry will take."""
    head = LedgerHead.objects.filter(id=1).first()
    return 0 if head is None else int(head.next_seq)


def _touching(collections: Scope) -> Any:
    return entries_visible(scope_names(collections))


def settled(collections: Scope) -> bool:
    """No entry touching ``collections`` was appended within the settle window: an answer started now
    may be cached."""
    since = timezone.now() - timedelta(seconds=settings.ANSWER_CACHE_SETTLE_SECONDS)
    return not _touching(collections).filter(time__gte=since.strftime("%Y-%m-%dT%H:%M:%S.%fZ")).exists()


def cache_lookup(*, key: str, collections: Scope) -> Answer | None:
    """The last finished answer under ``key`` that no later touching entry has made stale."""
    if not settings.ANSWER_CACHE:
        return None
    found = (
        Answer.objects.filter(cache_key=key, state__in=Answer.FINISHED, log_position__isnull=False)
        .order_by("-created_at")
        .first()
    )
    if found is None:
        return None
    assert found.log_position is not None
    since = _touching(collections).filter(seq__gte=found.log_position)
    if since.exists():
        logger.info("answer cache: %s is stale (the log changed for its collections)", found.id)
        return None
    return found


def cache_copy(found: Answer, *, question: str, user: AbstractBaseUser | None, started: float) -> Answer:
    """The asker's own answer: a copy of ``found`` (its fast token provenance too), marked as from it."""
    copied_from = found.id
    records = list(AttributionRecord.objects.filter(answer=found))
    with transaction.atomic():
        answer = Answer(**{field.attname: getattr(found, field.attname) for field in Answer._meta.concrete_fields})
        answer.id = uuid.uuid4()
        answer.question = question
        answer.user = user if isinstance(user, User) else None
        answer.stats = {**found.stats, "cache": {"hit": True, "of": str(copied_from)}}
        answer.timings_ms = {"cache": round((timezone.now().timestamp() - started) * 1000, 3)}
        answer.finished_at = timezone.now()
        answer.save(force_insert=True)
        for record in records:
            record.pk = None
            record._state.adding = True
            record.answer = answer
            record.save(force_insert=True)
    logger.info("answer cache: %s answered from %s", answer.id, copied_from)
    return answer


def cached_from(answer: Answer) -> str | None:
    """The answer ``answer`` was copied from, when it came from the cache."""
    cache = answer.stats.get("cache") if isinstance(answer.stats, dict) else None
    return str(cache["of"]) if isinstance(cache, dict) and cache.get("hit") else None
