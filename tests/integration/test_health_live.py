"""Health against the real services, and with Neo4j down."""

import json

import pytest
from django.core.management import call_command
from django.test import Client
from pytest_django.fixtures import Settings

from apps.graph.driver import close_driver
from tests.support import free_port

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_healthz_all_green(live_services: None) -> None:
    response = Client().get("/healthz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"database", "neo4j", "redis", "celery", "generation", "models", "vectors", "engine"}
    assert body["checks"]["engine"]["detail"].startswith("in-process: ")
    assert "Neo4j Kernel 5.26" in body["checks"]["neo4j"]["detail"]
    celery, generation = body["checks"]["celery"]["detail"], body["checks"]["generation"]["detail"]
    assert "ingest: ingest@" in celery and "attribution: ingest@" in celery and "maintenance: maintenance@" in celery
    assert generation.startswith("gpu: gpu@") and "slots busy" in generation and "gpu@" not in celery


def test_doctor_all_green(live_services: None, capsys: pytest.CaptureFixture[str]) -> None:
    call_command("doctor", "--json")
    body = json.loads(capsys.readouterr().out)
    assert body["status"] == "ok"
    assert all(check["ok"] for check in body["checks"].values())


@pytest.fixture
def neo4j_stopped(settings: Settings) -> None:
    """Point the app at a port where no Neo4j listens: what a stopped Neo4j looks like."""
    settings.NEO4J_URI = f"bolt://127.0.0.1:{free_port()}"
    close_driver()


def test_healthz_names_neo4j_and_the_fix(live_services: None, neo4j_stopped: None) -> None:
    response = Client().get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "degraded"
    neo4j = body["checks"]["neo4j"]
    assert neo4j["status"] == "down"
    assert "cannot reach Neo4j" in neo4j["detail"]
    assert neo4j["fix"].startswith("make up")
    assert body["checks"]["redis"]["status"] == "ok"


def test_doctor_names_neo4j_and_the_fix(
    live_services: None, neo4j_stopped: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        call_command("doctor")
    assert exit_info.value.code == 1
    lines = capsys.readouterr().out.splitlines()
    neo4j_line = next(line for line in lines if line.startswith("neo4j"))
    assert "DOWN" in neo4j_line and "cannot reach Neo4j" in neo4j_line
    assert any("fix: make up" in line for line in lines)


def test_pages_needing_neo4j_explain_instead_of_crashing(live_services: None, neo4j_stopped: None) -> None:
    response = Client().get("/graph/")
    assert response.status_code == 503
    assert "Neo4j knowledge graph is not available" in response.content.decode()


def test_graph_page_with_neo4j_up(live_services: None) -> None:
    response = Client().get("/graph/")
    assert response.status_code == 200
    assert "Knowledge graph" in response.content.decode()


def test_status_page_and_its_htmx_partial(live_services: None) -> None:
    page = Client().get("/status/")
    assert page.status_code == 200
    assert "<html" in page.content.decode() and "All services are up." in page.content.decode()
    partial = Client().get("/status/", headers={"hx-request": "true"})
    assert "<html" not in partial.content.decode()
    assert 'id="report"' in partial.content.decode()
