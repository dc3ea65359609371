"""Example questions for the search page, drawn from what the asker may read.

The names that most documents of the asker's collections mention (people, organisations, places,
works, events) become questions of the form their type calls for: "Who is Gwendolyn Pryce?",
"What is Bryological Society of Wales?", "Where is Tregaron?". They are read from Neo4j with the
asker's collections inside the statement, so an example never names something of a collection the
asker cannot read, and kept for a few minutes per set of collections (this process's cache).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

from django.conf import settings
from django.core.cache import cache
from neo4j import Driver, Query
from neo4j.exceptions import Neo4jError, ServiceUnavailable, SessionExpired

from apps.graph import cypher

logger = logging.getLogger(__name__)

EXAMPLES = 3
CANDIDATES = 12
SAMPLE_DOCUMENTS = 200
CACHE_SECONDS = 300
QUERY_TIMEOUT_S = 2.0
WHO = ("PERSON", "PER")
WHERE = ("GPE", "LOC", "FAC")
WHAT = ("ORG", "EVENT", "WORK_OF_ART", "PRODUCT", "LAW", "NORP")
TYPES = (*WHO, *WHERE, *WHAT)


def question_for(name: str, entity_type: str) -> str:
    """The example question a name of this type calls for."""
    kind = entity_type.upper()
    if kind in WHO:
        return f"Who is {name}?"
    if kind in WHERE:
        return f"Where is {name}?"
    return f"What is {name}?"


def pick(rows: Sequence[tuple[str, str]], *, count: int = EXAMPLES) -> list[str]:
    """``count`` questions from the candidates (name, type), most mentioned first, one per type while
    other types are left, then the rest in order."""
    chosen: list[tuple[str, str]] = []
    seen_types: set[str] = set()
    for name, kind in rows:
        if kind not in seen_types and len(chosen) < count:
            chosen.append((name, kind))
            seen_types.add(kind)
    for row in rows:
        if len(chosen) >= count:
            break
        if row not in chosen:
            chosen.append(row)
    order = {row: i for i, row in enumerate(rows)}
    return [question_for(name, kind) for name, kind in sorted(chosen, key=order.__getitem__)]


def _cache_key(collections: Sequence[str] | None) -> str:
    names = "*" if collections is None else "\n".join(sorted(collections))
    return "search-examples:" + hashlib.sha256(names.encode()).hexdigest()


def example_questions(*, driver: Driver, collections: Sequence[str] | None) -> list[str]:
    """Up to ``EXAMPLES`` questions about what ``collections`` (None: every collection) hold; none when
    they hold nothing or Neo4j cannot be read (the page works without them)."""
    if collections is not None and not collections:
        return []
    key = _cache_key(collections)
    cached = cache.get(key)
    if cached is not None:
        return list(cached)
    try:
        records, _, _ = driver.execute_query(
            Query(cypher.SEARCH_EXAMPLE_ENTITIES, timeout=QUERY_TIMEOUT_S),
            collections=None if collections is None else list(collections),
            types=list(TYPES),
            documents=SAMPLE_DOCUMENTS,
            limit=CANDIDATES,
            database_=settings.NEO4J_DATABASE,
            routing_="r",
        )
    except (ServiceUnavailable, SessionExpired, OSError, Neo4jError) as exc:
        logger.warning("no example questions: %s", exc)
        return []
    questions = pick([(str(r["name"]), str(r["type"] or "")) for r in records])
    cache.set(key, questions, CACHE_SECONDS)
    return questions
