"""Graph schema service: constraints and indexes, applied idempotently."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from neo4j import Driver

from apps.graph import cypher

logger = logging.getLogger(__name__)

CONVERT_PAGE = 2000  # relations or entities converted per transaction


@dataclass(frozen=True)
class SchemaReport:
    created: tuple[str, ...]
    existing: tuple[str, ...]


def _schema_names(*, driver: Driver, database: str) -> set[str]:
    names: set[str] = set()
    for statement in (cypher.SHOW_CONSTRAINT_NAMES, cypher.SHOW_INDEX_NAMES):
        records, _, _ = driver.execute_query(statement, database_=database)
        names.update(records[0]["names"])
    return names


def graph_schema_apply(*, driver: Driver, database: str | None = None) -> SchemaReport:
    """Create every constraint and index that is missing, fill in properties that older graphs lack
    (each unit's collection) and turn their support lists into edges; report what changed."""
    db = database or settings.NEO4J_DATABASE
    before = _schema_names(driver=driver, database=db)
    wanted = cypher.SCHEMA_CONSTRAINTS + cypher.SCHEMA_INDEXES
    for name in cypher.RETIRED_INDEXES:
        if name in before:
            driver.execute_query(cypher.DROP_INDEX.format(name=name), database_=db)  # a name from the code
            logger.info("graph schema: dropped %s", name)
    for name, statement in wanted:
        if name not in before:
            driver.execute_query(statement, database_=db)
            logger.info("graph schema: created %s", name)
    backfills = [(statement, "the collection") for statement in cypher.UNIT_COLLECTIONS_BACKFILL]
    for statement, what in [*backfills, (cypher.CJK_TEXT_BACKFILL, "the cjk index's text")]:
        records, _, _ = driver.execute_query(statement, database_=db)
        if records and records[0]["filled"]:
            logger.info("graph schema: set %s of %d units", what, records[0]["filled"])
    for statement in (cypher.SUPPORT_LISTS_CONVERT, cypher.ENTITY_DOCUMENTS_REMOVE):
        while converted := driver.execute_query(statement, limit=CONVERT_PAGE, database_=db)[0][0]["converted"]:
            logger.info("graph schema: %d support lists converted to edges", converted)
    created = tuple(name for name, _ in wanted if name not in before)
    existing = tuple(name for name, _ in wanted if name in before)
    return SchemaReport(created=created, existing=existing)


def graph_schema_names(*, driver: Driver, database: str | None = None) -> set[str]:
    """Names of all constraints and indexes now in the database."""
    return _schema_names(driver=driver, database=database or settings.NEO4J_DATABASE)
