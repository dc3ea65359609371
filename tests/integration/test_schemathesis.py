"""schemathesis against the REST API of the running test stack (web server, Celery workers, Neo4j).

The CLI, as a client would run it: every operation of the live OpenAPI document (/api/v1/openapi.json),
every check, the coverage, fuzzing and stateful phases, 50 examples per operation (10 for the upload:
each accepted one is an ingestion job for the worker), a fixed seed; configured by
tests/integration/schemathesis.toml (which names the one check left out, for the upload, and why) and
tests/integration/schemathesis_hooks.py (the uploaded files, the streamed answers' lines). Once with
a curator's key, once with a viewer's; it must report no failure and no error.

The web server runs here without the key throttle (RAGKG_LOGIN_MAX_FAILURES_PER_IP=0): schemathesis
sends bad keys on purpose (ignored_auth), and past 20 the address would get 429 for 15 minutes, on
every request of the run and of the tests after it. What the curator's run made (collections,
uploads and their documents) is removed afterwards, its unfinished jobs failed first.

Figures (cases per phase, checks run, answers by status) are printed: pytest -s shows them.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import web_server_running
from tests.support import BASE_DIR, ApiUser, api_user, manage_within

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(480)]

CONFIG = BASE_DIR / "tests" / "integration" / "schemathesis.toml"
PHASES = ("coverage", "fuzzing", "stateful")
CHECKS = {
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "positive_data_acceptance",
    "missing_required_header",
    "unsupported_method",
    "allow_header_conformance",
    "use_after_free",
    "ensure_resource_availability",
    "ignored_auth",
    "object_level_authorization",
    "max_response_time",
}
NO_THROTTLE: dict[str, str | None] = {"RAGKG_LOGIN_MAX_FAILURES_PER_IP": "0"}
JOBS_WAIT = 240  # seconds the curator's uploads may take to be ingested before the rest is failed
CLEANUP_SCRIPT = """
import os, time
from apps.accounts.models import Collection
from apps.graph.driver import get_driver
from apps.ingest.jobs import job_fail
from apps.ingest.models import Document, IngestJob
from apps.ingest.services import document_delete
names = list(Collection.objects.filter(owner__username=os.environ["FUZZ_OWNER"]).values_list("name", flat=True))
pending = IngestJob.objects.filter(collection__in=names, state__in=[IngestJob.QUEUED, IngestJob.RUNNING])
deadline = time.monotonic() + float(os.environ["FUZZ_WAIT"])
while pending.exists() and time.monotonic() < deadline:
    time.sleep(1)
failed = 0
for job in pending:
    job_fail(job_id=str(job.id), error="the schemathesis run is over")
    failed += 1
documents = list(Document.objects.filter(collection__in=names).values_list("id", flat=True))
for document_id in documents:
    document_delete(driver=get_driver(), document_id=document_id, actor="system:tests")
Collection.objects.filter(name__in=names).delete()
print(f"removed {len(names)} collections, {len(documents)} documents; failed {failed} unfinished jobs")
"""


@pytest.fixture(scope="module")
def web(live_services: None) -> Iterator[str]:
    """The test web server, (re)started without the key throttle, and afterwards as it was."""
    with web_server_running(env=NO_THROTTLE, restart=True) as url:
        yield url


@pytest.fixture(scope="module")
def curator(web: str) -> Iterator[ApiUser]:
    user = api_user("curator")
    yield user
    wait = str(JOBS_WAIT)
    removed = manage_within(JOBS_WAIT + 120, "shell", "-c", CLEANUP_SCRIPT, FUZZ_OWNER=user.name, FUZZ_WAIT=wait)
    assert removed.returncode == 0, removed.stdout + removed.stderr
    logger.info("after schemathesis: %s", removed.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def viewer(web: str) -> ApiUser:
    return api_user("viewer")


def schemathesis_run(web: str, key: str, reports: Path) -> subprocess.CompletedProcess[str]:
    """``schemathesis run`` on the live document with ``key``, its JSON and NDJSON reports in ``reports``."""
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file",
        str(CONFIG),
        "run",
        f"{web}/api/v1/openapi.json",
        "--header",
        f"Authorization: Bearer {key}",
        "--report",
        "json,ndjson",
        "--report-dir",
        str(reports),
        "--no-color",
    ]
    return subprocess.run(command, cwd=BASE_DIR, capture_output=True, text=True, timeout=420, check=False)


def _report(reports: Path, kind: str) -> Path:
    [path] = reports.glob(f"{kind}-*.{kind}")
    return path


def _scenarios(reports: Path) -> Iterator[dict[str, Any]]:
    with _report(reports, "ndjson").open() as lines:
        for line in lines:
            event = json.loads(line)
            if "ScenarioFinished" in event:
                yield event["ScenarioFinished"]


def run_figures(reports: Path) -> dict[str, Counter[str]]:
    """Test cases per phase, checks run by name, and the answers by status and media type."""
    figures: dict[str, Counter[str]] = {"cases": Counter(), "checks": Counter(), "statuses": Counter()}
    for scenario in _scenarios(reports):
        recorder = scenario["recorder"]
        figures["cases"][scenario["phase"]] += len(recorder.get("cases") or {})
        for checks in (recorder.get("checks") or {}).values():
            figures["checks"].update(check["name"] for check in checks)
        for interaction in (recorder.get("interactions") or {}).values():
            response = interaction.get("response") or {}
            media = (response.get("headers", {}).get("content-type") or ["none"])[0].split(";")[0]
            figures["statuses"][f"{response.get('status_code')} {media}"] += 1
    return figures


@pytest.mark.parametrize("persona", ["curator", "viewer"])
def test_schemathesis_finds_nothing(
    web: str,
    persona: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    user: ApiUser = request.getfixturevalue(persona)
    started = time.monotonic()
    run = schemathesis_run(web, user.key, tmp_path)
    seconds = round(time.monotonic() - started)
    report = json.loads(_report(tmp_path, "json").read_text())
    figures = {name: dict(sorted(counts.items())) for name, counts in run_figures(tmp_path).items()}
    logger.info("schemathesis as a %s: %d s, %s, %s", persona, seconds, report["test_cases"], figures)
    record_property("schemathesis", {"seconds": seconds, "test_cases": report["test_cases"], **figures})
    assert run.returncode == 0, run.stdout[-8000:] + run.stderr[-2000:]
    assert report["failures"] == [] and report["errors"] == [], report
    assert report["operations"]["tested"] == report["operations"]["total"] >= 16, report["operations"]
    assert all(report["phases"][phase]["status"] == "success" for phase in PHASES), report["phases"]
    cases = figures["cases"]
    assert cases["fuzzing"] >= 16 * 10 and cases["coverage"] > 0 and cases["stateful"] > 0, cases
    assert set(figures["checks"]) == CHECKS, set(figures["checks"]) ^ CHECKS
    assert figures["statuses"].get("200 application/x-ndjson", 0) >= 1, "no streamed answer was checked"
    warnings = report["warnings"]
    assert warnings["missing_deserializer"] == warnings["unsupported_regex"] == [], warnings
