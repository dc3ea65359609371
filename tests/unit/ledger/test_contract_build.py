"""The committed contract artifact is exactly what the pinned solc makes of the committed source."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BASE_DIR = Path(__file__).resolve().parents[3]
SOURCE = BASE_DIR / "contracts" / "RagkgLedgerAnchor.sol"
ARTIFACT = BASE_DIR / "apps" / "ledger" / "contract" / "RagkgLedgerAnchor.json"
SOLCJS = BASE_DIR / "tools" / "chain" / "node_modules" / "solc" / "solc.js"


def test_artifact_matches_a_fresh_compile() -> None:
    assert SOLCJS.is_file(), (
        "tools/chain/node_modules is missing, so the contract cannot be recompiled: "
        "run `make setup` (scripts/bootstrap.sh) first"
    )
    result = subprocess.run(
        [sys.executable, "scripts/contract_build.py", "--check"],
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_artifact_describes_the_committed_source() -> None:
    artifact = json.loads(ARTIFACT.read_text())
    assert artifact["sourceSha256"] == hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    assert artifact["compiler"].startswith("solc 0.8.37+commit.")
    assert artifact["settings"]["optimizer"] == {"enabled": True, "runs": 200}
    names = {(item["type"], item.get("name")) for item in artifact["abi"]}
    assert names >= {
        ("function", "anchor"),
        ("function", "rootAt"),
        ("function", "latestTreeSize"),
        ("function", "owner"),
        ("event", "Anchored"),
        ("error", "NotOwner"),
        ("error", "EmptyHead"),
        ("error", "ConflictingRoot"),
    }
    assert artifact["bytecode"].startswith("0x60")
    assert artifact["deployedBytecode"].startswith("0x60")


def _build_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("contract_build", BASE_DIR / "scripts" / "contract_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_check_names_what_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    build = _build_module()
    committed = json.loads(ARTIFACT.read_text())
    stale = tmp_path / "apps" / "ledger" / "contract" / "RagkgLedgerAnchor.json"
    stale.parent.mkdir(parents=True)
    stale.write_text(build.render({**committed, "bytecode": "0x00"}))
    monkeypatch.setattr(build, "BASE_DIR", tmp_path)

    assert build.check(committed) == 1
    err = capsys.readouterr().err
    assert "differs from a fresh compile" in err and "(bytecode)" in err
    assert "python scripts/contract_build.py" in err

    stale.write_text(build.render(committed))
    assert build.check(committed) == 0
