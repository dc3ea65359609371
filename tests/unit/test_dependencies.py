import kombu.exceptions
import neo4j.exceptions
import pytest
import redis.exceptions
from django.db import OperationalError
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.core.dependencies import DependencyUnavailable, classify, fix_for


@pytest.mark.parametrize(
    ("exc", "service"),
    [
        (neo4j.exceptions.ServiceUnavailable("refused"), "neo4j"),
        (neo4j.exceptions.SessionExpired("gone"), "neo4j"),
        (redis.exceptions.ConnectionError("refused"), "redis"),
        (kombu.exceptions.OperationalError("refused"), "redis"),
        (OperationalError("locked"), "database"),
    ],
)
def test_connection_errors_map_to_their_service(exc: Exception, service: str) -> None:
    down = classify(exc)
    assert down is not None
    assert down.service == service
    assert down.fix


def test_other_errors_are_not_dependency_failures() -> None:
    assert classify(ValueError("bug")) is None
    assert classify(KeyError("x")) is None


def test_auth_error_points_at_credentials() -> None:
    down = classify(neo4j.exceptions.AuthError("bad"))
    assert down is not None
    assert "NEO4J_PASSWORD" in down.fix


def test_fix_depends_on_whether_the_service_is_managed(settings: SettingsWrapper) -> None:
    settings.MANAGED_SERVICES = ["neo4j", "redis", "celery", "web"]
    assert fix_for("neo4j").startswith("make up")
    settings.MANAGED_SERVICES = ["redis", "celery", "web"]
    settings.NEO4J_URI = "neo4j+s://graph.example:7687"
    assert "neo4j+s://graph.example:7687" in fix_for("neo4j")
    settings.MANAGED_SERVICES = ["neo4j", "redis", "web"]
    assert fix_for("celery") == (
        "start the workers: celery -A ragkg worker -Q ingest,attribution and "
        "celery -A ragkg worker -Q maintenance -c 1 -B"
    )
    assert fix_for("generation") == "start a generation worker: celery -A ragkg worker -Q gpu"
    settings.MANAGED_SERVICES = ["neo4j", "redis", "celery", "web"]
    assert fix_for("generation").startswith("make up   (starts the generation worker")


def test_dependency_unavailable_reads_well() -> None:
    text = str(DependencyUnavailable("neo4j", "cannot reach Neo4j", "make up"))
    assert text == "Neo4j knowledge graph unavailable: cannot reach Neo4j (fix: make up)"
