"""tools/verify_proof.py, the auditor's standalone verifier: real bundles built with the ledger's own tree
and canonical form, checked against a small JSON-RPC node on 127.0.0.1 that tells the truth or lies.

Most cases call its ``main`` in this process (loaded from its path: it is no package of the app); the
standalone cases run it as ``python -I -S`` (no site-packages at all), which proves it needs nothing but
the standard library.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from eth_abi.abi import encode as abi_encode
from web3 import Web3

from apps.ledger.canonical import ACTIONS, Entry, entry_bytes
from apps.ledger.merkle import inclusion_proof, leaf_hash, root

BASE_DIR = Path(__file__).resolve().parents[3]
TOOL = BASE_DIR / "tools" / "verify_proof.py"
CHECKS = ["entry", "leaf_hash", "inclusion", "chain", "contract", "transaction", "confirmations"]

ROOT_AT = bytes(Web3.keccak(text="rootAt(uint64)"))[:4].hex()
ANCHORED = "0x" + bytes(Web3.keccak(text="Anchored(uint64,bytes32)")).hex()
CHAIN_ID = 31337
CONTRACT = "0x5fbdb2315678afecb367f032d93f642f64180aa3"
TX_HASH = "0x" + hashlib.sha256(b"anchor tx").hexdigest()
BLOCK = 5
BLOCK_HASH = "0x" + hashlib.sha256(b"block 5").hexdigest()
ZERO_WORD = "0x" + "00" * 32

ENTRIES = [
    Entry(
        seq=seq,
        time=f"2026-11-29T18:01:{seq:02d}.123456Z",
        actor="curator:ana",
        action=sorted(ACTIONS)[seq % len(ACTIONS)],
        subject_kind="Entity",
        subject_id=f"e:Zürich-{seq}",
        before=None if seq == 0 else hashlib.sha256(f"v{seq - 1}".encode()).hexdigest(),
        after=hashlib.sha256(f"v{seq}".encode()).hexdigest(),
    )
    for seq in range(13)
]
DATA = [entry_bytes(entry) for entry in ENTRIES]
LEAVES = [leaf_hash(data) for data in DATA]


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("verify_proof", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["verify_proof"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def make_bundle(index: int = 7, size: int = 13) -> dict[str, Any]:
    return {
        "format": "ragkg-ledger-proof/1",
        "entry": base64.b64encode(DATA[index]).decode(),
        "leaf_index": index,
        "leaf_hash": LEAVES[index].hex(),
        "tree_size": size,
        "inclusion_path": [node.hex() for node in inclusion_proof(index, LEAVES[:size])],
        "root": root(LEAVES[:size]).hex(),
        "anchor": {
            "chain_id": CHAIN_ID,
            "contract": CONTRACT,
            "tx_hash": TX_HASH,
            "block_number": BLOCK,
            "block_hash": BLOCK_HASH,
        },
    }


def word(value: int | bytes) -> str:
    return "0x" + (abi_encode(["uint64"], [value]) if isinstance(value, int) else value).hex()


@dataclass
class Chain:
    """What the node answers; an honest one holds the root of the tree of 13 anchored in block 5."""

    chain_id: int = CHAIN_ID
    head: int = BLOCK + 2
    roots: dict[int, str] = field(default_factory=lambda: {13: word(root(LEAVES))})
    receipts: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            TX_HASH: {
                "transactionHash": TX_HASH,
                "blockHash": BLOCK_HASH,
                "blockNumber": hex(BLOCK),
                "status": "0x1",
                "to": Web3.to_checksum_address(CONTRACT),  # mixed case, as nodes write it
                "logs": [
                    {
                        "address": Web3.to_checksum_address(CONTRACT),
                        "topics": [ANCHORED, word(13)],
                        "data": word(root(LEAVES)),
                    }
                ],
            }
        }
    )
    failing: set[str] = field(default_factory=set)  # methods answered with a JSON-RPC error

    def answer(self, method: str, params: list[Any]) -> Any:
        if method == "eth_chainId":
            return hex(self.chain_id)
        if method == "eth_blockNumber":
            return hex(self.head)
        if method == "eth_getTransactionReceipt":
            return self.receipts.get(params[0].lower())
        if method == "eth_call":
            call, data = params[0], params[0]["data"]
            assert params[1] == "latest"
            if call["to"].lower() != CONTRACT:
                return "0x"
            assert data[2:10] == ROOT_AT and len(data) == 2 + 8 + 64, data
            return self.roots.get(int(data[10:], 16), ZERO_WORD)
        raise AssertionError(f"unexpected method {method}")


@pytest.fixture
def chain() -> Chain:
    return Chain()


@pytest.fixture
def rpc(chain: Chain) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
            if request["method"] in chain.failing:
                reply["error"] = {"code": -32000, "message": "execution reverted"}
            else:
                reply["result"] = chain.answer(request["method"], request["params"])
            body = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


class Cli:
    """``verify_proof.py BUNDLE --rpc URL ARGS...`` on a bundle written to a file, in this process."""

    tool = load_tool()

    def __init__(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.path, self.capsys = tmp_path / "bundle.json", capsys

    def __call__(self, bundle: dict[str, Any] | str, url: str, *args: str) -> Result:
        self.path.write_text(bundle if isinstance(bundle, str) else json.dumps(bundle), encoding="utf-8")
        code: int = self.tool.main([str(self.path), "--rpc", url, *args])
        captured = self.capsys.readouterr()
        return Result(code, captured.out, captured.err)

    def json(self, bundle: dict[str, Any], url: str, *args: str) -> tuple[int, dict[str, Any]]:
        result = self(bundle, url, "--json", *args)
        report: dict[str, Any] = json.loads(result.stdout)
        assert [check["name"] for check in report["checks"]] == CHECKS
        assert report["ok"] is (result.returncode == 0)
        return result.returncode, report


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(tmp_path, capsys)


def standalone(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-I", "-S", str(TOOL), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def failed(report: dict[str, Any]) -> set[str]:
    return {check["name"] for check in report["checks"] if not check["ok"]}


def detail(report: dict[str, Any], name: str) -> str:
    return next(str(check["detail"]) for check in report["checks"] if check["name"] == name)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_the_constants_are_the_keccak_of_the_contracts_signatures() -> None:
    tool = Cli.tool
    assert bytes.fromhex(tool.ROOT_AT_SELECTOR) == bytes(Web3.keccak(text="rootAt(uint64)"))[:4]
    assert bytes.fromhex(tool.ANCHORED_TOPIC[2:]) == bytes(Web3.keccak(text="Anchored(uint64,bytes32)"))


def test_its_inclusion_check_agrees_with_the_ledgers_tree_on_every_small_tree() -> None:
    tool = Cli.tool
    for size in range(1, 18):
        leaves = [leaf_hash(bytes([i])) for i in range(size)]
        top = root(leaves)
        for index in range(size):
            path = inclusion_proof(index, leaves)
            assert tool.verify_inclusion(leaves[index], index, size, path, top)
            assert not tool.verify_inclusion(leaves[index], index, size, path, leaf_hash(b"other"))
            assert not tool.verify_inclusion(leaves[index], index, size, [*path, top], top)
            if path:
                assert not tool.verify_inclusion(leaves[index], index, size, path[:-1], top)
            if size > 1:
                assert not tool.verify_inclusion(leaves[index], (index + 1) % size, size, path, top)
        assert not tool.verify_inclusion(leaves[0], size, size, [], top)


def test_importing_it_imports_neither_django_nor_the_app() -> None:
    code = (
        "import sys; sys.path.insert(0, 'tools'); import verify_proof; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'django', 'apps', 'ragkg', 'web3'}); "
        "assert not bad, bad"
    )
    command = [sys.executable, "-c", code]
    result = subprocess.run(command, cwd=BASE_DIR, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr


def test_it_runs_alone_on_the_standard_library(tmp_path: Path, rpc: str) -> None:
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(make_bundle()), encoding="utf-8")
    result = standalone(str(path), "--rpc", rpc, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert [check["name"] for check in report["checks"] if check["ok"]] == CHECKS
    assert report["entry"] == ENTRIES[7].as_json()
    assert report["confirmations"] == 3
    malformed = standalone(str(tmp_path / "none.json"), "--rpc", rpc)
    assert malformed.returncode == 2
    assert "cannot read the bundle" in malformed.stderr


@pytest.mark.parametrize(("index", "size"), [(7, 13), (0, 13), (12, 13), (0, 1), (5, 8)])
def test_a_true_bundle_passes_every_check(cli: Cli, chain: Chain, rpc: str, index: int, size: int) -> None:
    chain.roots[size] = word(root(LEAVES[:size]))
    if size != 13:  # the transaction anchored this tree instead
        receipt = chain.receipts[TX_HASH]
        receipt["logs"] = [{**receipt["logs"][0], "topics": [ANCHORED, word(size)], "data": chain.roots[size]}]
    code, report = cli.json(make_bundle(index, size), rpc)
    assert code == 0, report
    assert failed(report) == set()
    assert report["entry"] == ENTRIES[index].as_json()
    assert report["confirmations"] == 3


def test_the_human_report_is_a_line_per_check(cli: Cli, rpc: str) -> None:
    result = cli(make_bundle(), rpc)
    lines = result.stdout.splitlines()
    assert result.returncode == 0
    assert [line.split()[:2] for line in lines[:-1]] == [["ok", name] for name in CHECKS]
    assert lines[-1] == "VERIFIED"


def _edit_entry(bundle: dict[str, Any], edit: Callable[[bytes], bytes], rehash: bool = False) -> None:
    data = edit(base64.b64decode(bundle["entry"]))
    bundle["entry"] = base64.b64encode(data).decode()
    if rehash:
        bundle["leaf_hash"] = leaf_hash(data).hex()


def _receipt(chain: Chain) -> dict[str, Any]:
    return chain.receipts[TX_HASH]


Tamper = Callable[[dict[str, Any], Chain], None]
TAMPERING: dict[str, tuple[Tamper, set[str], str]] = {
    "a changed entry byte": (
        lambda b, c: _edit_entry(b, lambda d: d.replace(b"curator:ana", b"curator:anb")),
        {"leaf_hash", "inclusion"},
        "not " + LEAVES[7].hex(),
    ),
    "a non-canonical entry": (
        lambda b, c: _edit_entry(b, lambda d: d.replace(b'"seq":7', b'"seq": 7'), rehash=True),
        {"entry", "inclusion"},
        "canonical form",
    ),
    "a float in the entry": (
        lambda b, c: _edit_entry(b, lambda d: d.replace(b'"seq":7', b'"seq":7.0'), rehash=True),
        {"entry", "inclusion"},
        "no canonical form",
    ),
    "an unknown format": (lambda b, c: b.update(format="ragkg-ledger-proof/9"), {"entry"}, "unknown format"),
    "a wrong leaf index": (lambda b, c: b.update(leaf_index=6), {"entry", "inclusion"}, "is not the leaf index 6"),
    "a leaf index beyond the tree": (lambda b, c: b.update(leaf_index=13), {"entry", "inclusion"}, "does not lead"),
    "a truncated path": (lambda b, c: b["inclusion_path"].pop(), {"inclusion"}, "does not lead"),
    "a path with a changed node": (
        lambda b, c: b["inclusion_path"].__setitem__(0, hashlib.sha256(b"x").hexdigest()),
        {"inclusion"},
        "does not lead",
    ),
    "a wrong root": (
        lambda b, c: b.update(root=hashlib.sha256(b"x").hexdigest()),
        {"inclusion", "contract", "transaction"},
        "does not lead",
    ),
    "a wrong chain id": (lambda b, c: setattr(c, "chain_id", 1), {"chain"}, "chain id 1, not 31337"),
    "a contract holding another root": (
        lambda b, c: c.roots.update({13: word(root(LEAVES[:12]))}),
        {"contract"},
        "not the bundle's root",
    ),
    "a contract holding no root": (lambda b, c: c.roots.clear(), {"contract"}, "holds no root for tree size 13"),
    "another contract": (
        lambda b, c: b["anchor"].update(contract="0x" + "11" * 20),
        {"contract", "transaction"},
        "rootAt(13) = 0x,",
    ),
    "a node refusing the call": (lambda b, c: c.failing.add("eth_call"), {"contract"}, "execution reverted"),
    "a receipt without the event": (lambda b, c: _receipt(c).update(logs=[]), {"transaction"}, "no Anchored(13"),
    "an event for another tree size": (
        lambda b, c: _receipt(c)["logs"][0].update(topics=[ANCHORED, word(12)]),
        {"transaction"},
        "no Anchored(13",
    ),
    "an event of another contract": (
        lambda b, c: _receipt(c)["logs"][0].update(address="0x" + "22" * 20),
        {"transaction"},
        "no Anchored(13",
    ),
    "a reverted transaction": (lambda b, c: _receipt(c).update(status="0x0"), {"transaction"}, "status '0x0'"),
    "a transaction to someone else": (
        lambda b, c: _receipt(c).update(to="0x" + "33" * 20),
        {"transaction"},
        "not to the contract",
    ),
    "a transaction in another block": (
        lambda b, c: _receipt(c).update(blockHash="0x" + "44" * 32),
        {"transaction"},
        "mined in block 5 0x4444",
    ),
    "an unknown transaction": (
        lambda b, c: c.receipts.clear(),
        {"transaction", "confirmations"},
        "no receipt for " + TX_HASH,
    ),
    "too few confirmations": (lambda b, c: setattr(c, "head", BLOCK), {"confirmations"}, "1 confirmation(s), 2"),
}


@pytest.mark.parametrize("case", TAMPERING)
def test_each_lie_fails_its_named_check(cli: Cli, chain: Chain, rpc: str, case: str) -> None:
    tamper, expected, words = TAMPERING[case]
    bundle = copy.deepcopy(make_bundle())
    tamper(bundle, chain)
    code, report = cli.json(bundle, rpc, "--min-confirmations", "2")
    assert code == 1
    assert failed(report) == expected
    assert any(words in detail(report, name) for name in expected), report["checks"]


def test_confirmations_are_counted_from_the_receipts_block(cli: Cli, chain: Chain, rpc: str) -> None:
    chain.head = BLOCK + 9
    code, report = cli.json(make_bundle(), rpc, "--min-confirmations", "10")
    assert (code, report["confirmations"]) == (0, 10)
    code, report = cli.json(make_bundle(), rpc, "--min-confirmations", "11")
    assert (code, failed(report), report["confirmations"]) == (1, {"confirmations"}, 10)


def test_an_unreachable_node_skips_the_chain_checks_with_a_clear_message(cli: Cli) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    result = cli(make_bundle(), url)
    assert result.returncode == 1
    assert f"cannot reach the chain at {url}: " in result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["ok"] * 3 + ["skipped"] * 4
    assert all(f"cannot reach the chain at {url}" in line for line in lines[3:7])
    code, report = cli.json(make_bundle(), url)
    assert (code, failed(report), report["confirmations"]) == (1, set(CHECKS[3:]), None)


def test_a_node_that_never_answers_times_out(cli: Cli) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel does) and never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        result = cli(make_bundle(), url, "--timeout", "0.5")
    assert time.monotonic() - started < 20
    assert result.returncode == 1
    assert f"cannot reach the chain at {url}: " in result.stderr
    assert "timed out" in result.stderr


def _bundle_with(**changes: Any) -> str:
    bundle = make_bundle()
    for key, value in changes.items():
        (bundle["anchor"] if key in bundle["anchor"] else bundle)[key] = value
    return json.dumps(bundle)


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[1, 2]",
        json.dumps({key: value for key, value in make_bundle().items() if key != "anchor"}),
        _bundle_with(entry="not base64!"),
        _bundle_with(leaf_index=-1),
        _bundle_with(leaf_index=True),
        _bundle_with(tree_size=0),
        _bundle_with(tree_size=2**64),
        _bundle_with(leaf_hash="ab" * 31),
        _bundle_with(root="zz" * 32),
        _bundle_with(root="ab " * 32),
        _bundle_with(format=1),
        _bundle_with(inclusion_path=["ab" * 32, 7]),
        _bundle_with(contract=CONTRACT[2:]),
        _bundle_with(block_hash="0x1234"),
        _bundle_with(chain_id="31337"),
    ],
)
def test_a_malformed_bundle_exits_2(cli: Cli, text: str) -> None:
    result = cli(text, "http://127.0.0.1:1")
    assert result.returncode == 2, result.stdout
    assert "cannot read the bundle" in result.stderr
    result = cli(text, "http://127.0.0.1:1", "--json")
    assert result.returncode == 2
    assert json.loads(result.stdout)["ok"] is False
