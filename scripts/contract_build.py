"""Compile the ledger's anchor contract offline and write (or check) its committed artifact.

    python scripts/contract_build.py           write apps/ledger/contract/RagkgLedgerAnchor.json
    python scripts/contract_build.py --check   exit 1 when that file differs from a fresh compile

The compiler is solcjs from npm, pinned in tools/chain/package-lock.json and installed by
scripts/bootstrap.sh (`make setup`). The input is solc's standard JSON with fixed settings and the
source under its fixed relative path, so every run gives the same bytes (solc's metadata hash, at the
end of the bytecode, covers the source path, its content and the settings).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
CONTRACT = "RagkgLedgerAnchor"
SOURCE = f"contracts/{CONTRACT}.sol"
ARTIFACT = f"apps/ledger/contract/{CONTRACT}.json"
SOLCJS = "tools/chain/node_modules/solc/solc.js"
# cancun: accepted by anvil 1.7.1 (whose default hardfork is newer) and by every EVM chain since Dencun.
SETTINGS: dict[str, Any] = {
    "evmVersion": "cancun",
    "optimizer": {"enabled": True, "runs": 200},
    "metadata": {"bytecodeHash": "ipfs"},
}
OUTPUTS = ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"]
TIMEOUT = 300


class BuildError(Exception):
    """The contract could not be compiled; the message says why and what to do."""


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        raise BuildError("node is not installed: run `make setup` (scripts/bootstrap.sh)")
    if not (BASE_DIR / SOLCJS).is_file():
        raise BuildError(f"{SOLCJS} is missing: run `make setup` (scripts/bootstrap.sh installs tools/chain)")
    return node


def _solc(*args: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        [_node(), SOLCJS, *args],
        cwd=BASE_DIR,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    if result.returncode != 0:
        raise BuildError(f"solcjs {' '.join(args)} failed ({result.returncode}):\n{result.stderr.strip()}")
    return result.stdout


def compiler_version() -> str:
    return "solc " + _solc("--version").strip()


def standard_input(source: str) -> dict[str, Any]:
    return {
        "language": "Solidity",
        "sources": {SOURCE: {"content": source}},
        "settings": {**SETTINGS, "outputSelection": {SOURCE: {CONTRACT: OUTPUTS}}},
    }


def compile_contract(source: str) -> dict[str, Any]:
    """solc's output for the contract; warnings are printed, errors raise BuildError."""
    text = _solc("--standard-json", stdin=json.dumps(standard_input(source)))
    # solcjs prints a note (">>> Cannot retry compilation with SMT ...") to stdout before the JSON.
    start = text.find("\n{") + 1 if not text.startswith("{") else 0
    try:
        output = json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise BuildError(f"solcjs gave no JSON output: {text[:500]!r}") from exc
    problems = output.get("errors", [])
    errors = [p for p in problems if p.get("severity") == "error"]
    for problem in problems:
        if problem not in errors:
            print(problem.get("formattedMessage", problem.get("message", "")), file=sys.stderr)
    if errors:
        raise BuildError("solc refused the contract:\n" + "\n".join(p.get("formattedMessage", "") for p in errors))
    contract: dict[str, Any] = output["contracts"][SOURCE][CONTRACT]
    return contract


def build_artifact() -> dict[str, Any]:
    source = (BASE_DIR / SOURCE).read_text(encoding="utf-8")
    contract = compile_contract(source)
    return {
        "contractName": CONTRACT,
        "source": SOURCE,
        "compiler": compiler_version(),
        "settings": SETTINGS,
        "sourceSha256": hashlib.sha256(source.encode("utf-8")).hexdigest(),
        "abi": contract["abi"],
        "bytecode": "0x" + contract["evm"]["bytecode"]["object"],
        "deployedBytecode": "0x" + contract["evm"]["deployedBytecode"]["object"],
    }


def render(artifact: dict[str, Any]) -> str:
    return json.dumps(artifact, indent=2) + "\n"


def check(fresh: dict[str, Any]) -> int:
    path = BASE_DIR / ARTIFACT
    try:
        committed_text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        print(f"{ARTIFACT} is missing: run `python scripts/contract_build.py`", file=sys.stderr)
        return 1
    if committed_text == render(fresh):
        print(f"{ARTIFACT} matches {SOURCE}")
        return 0
    try:
        committed = json.loads(committed_text)
    except json.JSONDecodeError:
        committed = {}
    differing = sorted(key for key in fresh.keys() | committed.keys() if fresh.get(key) != committed.get(key))
    print(
        f"{ARTIFACT} differs from a fresh compile of {SOURCE} ({', '.join(differing) or 'formatting'}): "
        "run `python scripts/contract_build.py` and commit the result",
        file=sys.stderr,
    )
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the committed artifact, write nothing")
    args = parser.parse_args(argv)
    try:
        fresh = build_artifact()
    except BuildError as exc:
        print(f"contract build: {exc}", file=sys.stderr)
        return 2
    if args.check:
        return check(fresh)
    path = BASE_DIR / ARTIFACT
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(fresh), encoding="utf-8")
    print(f"wrote {ARTIFACT} ({len(fresh['deployedBytecode']) // 2 - 1} bytes of runtime code)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
