"""The health report's logic, with fake checks behind the CHECKS table."""

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.health import checks
from apps.health.checks import CheckResult, run_checks


def fake(name: str, ok: bool, delay: float = 0.0) -> Callable[[], CheckResult]:
    def check() -> CheckResult:
        time.sleep(delay)
        return CheckResult(name, ok, f"{name} detail", None if ok else f"fix {name}")

    return check


@pytest.fixture
def fake_checks(monkeypatch: pytest.MonkeyPatch, settings: SettingsWrapper) -> dict[str, Callable[[], CheckResult]]:
    settings.HEALTH_CHECK_TIMEOUT = 0.3
    table = {"database": fake("database", True), "neo4j": fake("neo4j", False), "slow": fake("slow", True, delay=3)}
    monkeypatch.setattr(checks, "CHECKS", table)
    return table


def test_checks_run_in_parallel_under_one_deadline(fake_checks: dict[str, Callable[[], CheckResult]]) -> None:
    started = time.monotonic()
    results = {r.name: r for r in run_checks()}
    assert time.monotonic() - started < 2.5
    assert results["database"].ok
    assert not results["neo4j"].ok and results["neo4j"].fix == "fix neo4j"
    assert not results["slow"].ok
    assert results["slow"].detail == "no answer within 0.3s"


def test_healthz_is_503_with_the_failing_service_named(fake_checks: dict[str, Callable[[], CheckResult]]) -> None:
    fake_checks.pop("slow")
    response = Client().get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "degraded"
    assert body["checks"]["neo4j"] == {
        "name": "neo4j",
        "ok": False,
        "status": "down",
        "detail": "neo4j detail",
        "fix": "fix neo4j",
        "elapsed_ms": body["checks"]["neo4j"]["elapsed_ms"],
    }
    assert body["checks"]["database"]["status"] == "ok"


def test_healthz_is_200_when_all_are_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks, "CHECKS", {"database": fake("database", True), "redis": fake("redis", True)})
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_doctor_prints_the_fix_and_exits_non_zero(
    fake_checks: dict[str, Callable[[], CheckResult]], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_checks.pop("slow")
    with pytest.raises(SystemExit) as exit_info:
        call_command("doctor")
    assert exit_info.value.code == 1
    out = capsys.readouterr().out
    assert "neo4j" in out and "DOWN" in out and "fix: fix neo4j" in out
    assert "some services are down" in out


def test_doctor_json(fake_checks: dict[str, Callable[[], CheckResult]], capsys: pytest.CaptureFixture[str]) -> None:
    fake_checks.pop("slow")
    with pytest.raises(SystemExit):
        call_command("doctor", "--json")
    body = json.loads(capsys.readouterr().out)
    assert body["status"] == "degraded"
    assert body["checks"]["neo4j"]["fix"] == "fix neo4j"


@pytest.mark.django_db
def test_the_vectors_check_reports_an_empty_store_its_position_and_a_model_mismatch(
    tmp_path: Path, settings: SettingsWrapper
) -> None:
    import numpy as np

    from apps.vectors.registry import vector_registry, vector_registry_reset
    from apps.vectors.services import vectors_add
    from apps.vectors.types import VectorItem

    settings.VECTORS_DIR = tmp_path / "vectors"
    settings.VECTORS_TEXT_INDEX = "flat"
    vector_registry_reset()
    assert checks.check_vectors().as_dict()["detail"] == "text: empty"

    vectors = np.eye(2, settings.VECTORS_TEXT_DIM, dtype=np.float32)
    vectors_add(
        space="text", items=[VectorItem("a" * 32, "Chunk", "c"), VectorItem("b" * 32, "Chunk", "c")], vectors=vectors
    )
    report = checks.check_vectors()
    assert report.ok and report.detail == "text: change 1 stored, not loaded in this process"
    assert vector_registry().get("text").count == 2
    assert checks.check_vectors().detail == "text: change 1 stored, this process at change 1"

    settings.VECTORS_TEXT_MODEL = "multilingual-e5-small"
    report = checks.check_vectors()
    assert not report.ok and "the store holds all-MiniLM-L6-v2" in report.detail
    assert "vectors rebuild" in str(report.as_dict()["fix"])
    vector_registry_reset()


def test_the_status_page_says_which_generator_answers_and_why(
    fake_checks: dict[str, Callable[[], CheckResult]], settings: SettingsWrapper, tmp_path: Path
) -> None:
    from apps.models import auto, probe

    settings.GENERATOR, settings.GENERATOR_URLS = "auto", []
    settings.MODEL_CACHE_DIR, settings.ANSWER_BUDGET_S = tmp_path, 6.0
    page = Client().get("/status/").content.decode()
    assert "Answer generation" in page and "not measured on this machine yet" in page
    timings = (
        probe.Timing("qwen2.5-1.5b", "float32", 12.0, note="not loaded: 12.0 s estimated"),
        probe.Timing("qwen2.5-0.5b", "float32", 4.0, 5.0, 3.9, 0.137),
    )
    result = probe.ProbeResult("qwen2.5-0.5b", "float32", "qwen2.5-0.5b (float32) fits", 6.0, timings, {"cpu": "X"})
    probe.probe_write(auto.result_path(settings.MODEL_DEVICE, tmp_path, 6.0), result)
    auto._missing_since.clear()
    page = Client().get("/status/").content.decode()
    assert "qwen2.5-0.5b (float32) fits" in page and "not loaded: 12.0 s estimated" in page
    assert "<td>137</td>" in page and "<td>5.54</td>" in page, "ms per token, expected answer"


def test_the_engine_check_names_each_server(settings: SettingsWrapper) -> None:
    from apps.models import registry

    settings.GENERATOR_URLS = []
    assert checks.check_engine().ok and "in-process" in checks.check_engine().detail
    settings.GENERATOR_URLS = ["http://127.0.0.1:9/v1"]  # the discard port: nothing listens
    settings.HEALTH_CHECK_TIMEOUT = 1.0
    registry.forget_loaded()
    try:
        down = checks.check_engine()
    finally:
        registry.forget_loaded()
    assert not down.ok and "http://127.0.0.1:9/v1 unreachable" in down.detail
    assert "RAGKG_GENERATOR_URL" in (down.fix or "")
