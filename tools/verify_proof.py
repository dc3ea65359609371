#!/usr/bin/env python3
"""Verify a ragkg ledger proof bundle on your own, against an EVM node you choose.

    python tools/verify_proof.py bundle.json --rpc http://127.0.0.1:8545 [--json] [--min-confirmations N]

Standard library only, and nothing of ragkg: an auditor copies this one file. It checks that the
entry is canonical, hashes it into its RFC 9162 leaf, walks the inclusion path to the root, and asks
the chain whether the anchoring contract holds that root and whether the anchoring transaction
emitted it. The bundle format and the checks are specified in docs/ledger.md ("Standalone verifier").
Exit status: 0 all checks pass, 1 a check fails (or the chain cannot be reached), 2 unusable bundle.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import http.client
import json
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, NoReturn

FORMAT = "ragkg-ledger-proof/1"
ROOT_AT_SELECTOR = "eaa38b41"  # keccak256("rootAt(uint64)")[:4]
# keccak256("Anchored(uint64,bytes32)"): topic 0 of the contract's event Anchored(uint64 indexed treeSize, bytes32 root)
ANCHORED_TOPIC = "0x4ac5b9bdb01817da80ec1c33e76c5bef927ab969dd8e8ba4ce21da0d7996e56f"


class BundleError(ValueError):
    """The bundle cannot be read: exit status 2."""


class ChainError(Exception):
    """The node answered, but not with what a check needs."""


class Unreachable(ChainError):
    """No JSON-RPC answer at all (refused, timed out, not HTTP 200, not JSON)."""


@dataclass(frozen=True)
class Bundle:
    format: str
    entry: bytes
    leaf_index: int
    leaf_hash: bytes
    tree_size: int
    path: list[bytes]
    root: bytes
    chain_id: int
    contract: str  # 0x-prefixed, lower case, as are the two hashes below
    tx_hash: str
    block_number: int
    block_hash: str


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def _get(obj: dict[str, Any], key: str, kind: type) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) or (isinstance(value, int) and value < 0):
        raise BundleError(f"{key!r} must be a {'non-negative integer' if kind is int else kind.__name__}")
    return value


def _hex(value: Any, key: str, size: int, prefix: str = "") -> bytes:
    """``size`` bytes in hex after ``prefix`` (required when given; otherwise an optional "0x")."""
    digits = value.removeprefix("0x") if isinstance(value, str) and value.startswith(prefix) else ""
    if not re.fullmatch(f"[0-9a-fA-F]{{{2 * size}}}", digits):
        raise BundleError(f"{key!r} must be {size} bytes in hex" + (f" after {prefix}" if prefix else ""))
    return bytes.fromhex(digits)


def read_bundle(text: str) -> Bundle:
    """The bundle in ``text``; BundleError when it is not one (JSON, the fields, their types and sizes)."""
    try:
        data = json.loads(text)
        anchor: dict[str, Any] = data["anchor"]
    except (ValueError, TypeError, KeyError) as exc:
        raise BundleError(f"not a JSON object with an 'anchor': {exc!r}") from None
    encoded = _get(data, "entry", str)
    try:
        entry = base64.b64decode(encoded, validate=True)
    except ValueError:  # binascii.Error
        raise BundleError("'entry' is not base64") from None
    if not isinstance(anchor, dict) or not 0 < _get(data, "tree_size", int) < 2**64:
        raise BundleError("'anchor' must be an object and 'tree_size' a uint64 of at least 1")
    return Bundle(
        format=_get(data, "format", str),
        entry=entry,
        leaf_index=_get(data, "leaf_index", int),
        leaf_hash=_hex(data.get("leaf_hash"), "leaf_hash", 32),
        tree_size=data["tree_size"],
        path=[_hex(node, "inclusion_path", 32) for node in _get(data, "inclusion_path", list)],
        root=_hex(data.get("root"), "root", 32),
        chain_id=_get(anchor, "chain_id", int),
        contract="0x" + _hex(anchor.get("contract"), "contract", 20, "0x").hex(),
        tx_hash="0x" + _hex(anchor.get("tx_hash"), "tx_hash", 32, "0x").hex(),
        block_number=_get(anchor, "block_number", int),
        block_hash="0x" + _hex(anchor.get("block_hash"), "block_hash", 32, "0x").hex(),
    )


def verify_inclusion(leaf: bytes, index: int, size: int, path: Sequence[bytes], root: bytes) -> bool:
    """RFC 9162 section 2.1.3.2, step by step: fold the path into the leaf hash, each sibling on the
    left when the node is a right child (or the last node of its level), and require that the path
    ends exactly at the top (sn == 0) with the expected root. Node hash: SHA-256(0x01 || left || right)."""

    def node(left: bytes, right: bytes) -> bytes:
        return hashlib.sha256(b"\x01" + left + right).digest()

    if not 0 <= index < size:
        return False
    fn, sn, result = index, size - 1, leaf
    for sibling in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            result = node(sibling, result)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            result = node(result, sibling)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and result == root


def _no_float(text: str) -> NoReturn:
    raise ValueError(f"{text} has no canonical form (floats, NaN and Infinity are not allowed)")


def check_entry(bundle: Bundle) -> tuple[Check, dict[str, Any] | None]:
    problems = [] if bundle.format == FORMAT else [f"unknown format {bundle.format!r} (this verifier reads {FORMAT})"]
    value: Any = None
    try:
        value = json.loads(bundle.entry.decode("utf-8"), parse_float=_no_float, parse_constant=_no_float)
        canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except ValueError as exc:  # UnicodeDecodeError, JSONDecodeError and UnicodeEncodeError are ValueErrors
        problems.append(f"the entry is not UTF-8 JSON in canonical form: {exc}")
    else:
        if not isinstance(value, dict):
            problems.append("the entry is not a JSON object")
            value = None
        elif canonical != bundle.entry:
            problems.append("the entry bytes are not in canonical form (sorted keys, no whitespace, raw UTF-8)")
        elif value.get("seq") != bundle.leaf_index or isinstance(value.get("seq"), bool):
            problems.append(f"the entry's seq {value.get('seq')!r} is not the leaf index {bundle.leaf_index}")
    detail = "; ".join(problems) or f"entry {bundle.leaf_index} is canonical JSON ({FORMAT})"
    return Check("entry", not problems, detail), value


class Rpc:
    """A JSON-RPC client of one node; every call gives up after ``timeout`` seconds."""

    def __init__(self, url: str, timeout: float) -> None:
        self.url, self.timeout = url, timeout

    def __call__(self, method: str, *params: Any) -> Any:
        if not self.url.startswith(("http://", "https://")):
            raise Unreachable("not an http(s) URL")
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)})
        request = urllib.request.Request(self.url, body.encode(), {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise Unreachable(f"HTTP {exc.code} {exc.reason}") from None
        except urllib.error.URLError as exc:
            raise Unreachable(str(exc.reason)) from None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise Unreachable(f"{type(exc).__name__}: {exc}") from None
        if not isinstance(answer, dict) or ("result" not in answer and "error" not in answer):
            raise Unreachable("the answer is not JSON-RPC")
        if "error" in answer:
            raise ChainError(f"{method} failed: {answer['error']}")
        return answer["result"]


def _quantity(value: Any, what: str) -> int:
    if isinstance(value, str) and re.fullmatch("0x[0-9a-fA-F]+", value):
        return int(value, 16)
    raise ChainError(f"{what} is not a hex quantity: {value!r}")


def _word(value: int | bytes) -> str:
    return "0x" + (value.hex() if isinstance(value, bytes) else f"{value:064x}")


class ChainChecks:
    """Checks 4 to 7, in order, each answering (ok, detail); the transaction's block feeds the last."""

    def __init__(self, bundle: Bundle, rpc: Rpc, min_confirmations: int) -> None:
        self.bundle, self.rpc, self.min_confirmations = bundle, rpc, min_confirmations
        self.block: int | None = None
        self.count: int | None = None

    def chain(self) -> tuple[bool, str]:
        chain_id, expected = _quantity(self.rpc("eth_chainId"), "eth_chainId"), self.bundle.chain_id
        return chain_id == expected, f"chain id {chain_id}" + ("" if chain_id == expected else f", not {expected}")

    def contract(self) -> tuple[bool, str]:
        size, root = self.bundle.tree_size, _word(self.bundle.root)
        call = {"to": self.bundle.contract, "data": "0x" + ROOT_AT_SELECTOR + _word(size)[2:]}
        held = str(self.rpc("eth_call", call, "latest")).lower()
        if held == root:
            return True, f"rootAt({size}) = {held}"
        if held == _word(0):
            return False, f"the contract holds no root for tree size {size}"
        return False, f"rootAt({size}) = {held}, not the bundle's root {root}"

    def transaction(self) -> tuple[bool, str]:
        bundle, root = self.bundle, _word(self.bundle.root)
        receipt = self.rpc("eth_getTransactionReceipt", bundle.tx_hash)
        if not isinstance(receipt, dict):
            return False, f"no receipt for {bundle.tx_hash} (unknown or not mined)"
        self.block = block = _quantity(receipt.get("blockNumber"), "the receipt's blockNumber")
        problems = [] if receipt.get("status") == "0x1" else [f"status {receipt.get('status')!r}, not 0x1"]
        if str(receipt.get("to")).lower() != bundle.contract:
            problems.append(f"sent to {receipt.get('to')}, not to the contract {bundle.contract}")
        if str(receipt.get("blockHash")).lower() != bundle.block_hash or block != bundle.block_number:
            where = f"{bundle.block_number} {bundle.block_hash}"
            problems.append(f"mined in block {block} {receipt.get('blockHash')}, not {where}")
        topics = [ANCHORED_TOPIC, _word(bundle.tree_size)]
        logs = receipt.get("logs")
        if not any(
            isinstance(log, dict)
            and str(log.get("address")).lower() == bundle.contract
            and [str(topic).lower() for topic in log.get("topics") or []] == topics
            and str(log.get("data")).lower() == root
            for log in (logs if isinstance(logs, list) else [])
        ):
            problems.append(f"its logs hold no Anchored({bundle.tree_size}, {root}) event of the contract")
        return not problems, "; ".join(problems) or f"{bundle.tx_hash} anchored the root in block {block}"

    def confirmations(self) -> tuple[bool, str]:
        if self.block is None:
            return False, "skipped: no receipt to count from"
        self.count = _quantity(self.rpc("eth_blockNumber"), "eth_blockNumber") - self.block + 1
        return self.count >= self.min_confirmations, f"{self.count} confirmation(s), {self.min_confirmations} required"


def verify(bundle: Bundle, rpc: Rpc, min_confirmations: int) -> tuple[list[Check], dict[str, Any] | None, int | None]:
    """All seven checks, in order; the entry as decoded (None if it is not a JSON object); the confirmations."""
    entry_check, entry = check_entry(bundle)
    leaf = hashlib.sha256(b"\x00" + bundle.entry).digest()
    leaf_ok = leaf == bundle.leaf_hash
    leaf_detail = f"SHA-256(0x00 || entry) = {leaf.hex()}" + ("" if leaf_ok else f", not {bundle.leaf_hash.hex()}")
    included = verify_inclusion(leaf, bundle.leaf_index, bundle.tree_size, bundle.path, bundle.root)
    path = f"the path of {len(bundle.path)} hashes {'leads' if included else 'does not lead'} from leaf"
    tree = f"{bundle.leaf_index} to the root {bundle.root.hex()} of a tree of {bundle.tree_size}"
    checks = [entry_check, Check("leaf_hash", leaf_ok, leaf_detail), Check("inclusion", included, f"{path} {tree}")]
    chain = ChainChecks(bundle, rpc, min_confirmations)
    unreachable: str | None = None
    for step in (chain.chain, chain.contract, chain.transaction, chain.confirmations):
        name = step.__name__
        if unreachable:
            checks.append(Check(name, False, f"skipped: {unreachable}"))
            continue
        try:
            checks.append(Check(name, *step()))
        except Unreachable as exc:
            unreachable = f"cannot reach the chain at {rpc.url}: {exc}"
            checks.append(Check(name, False, f"skipped: {unreachable}"))
        except ChainError as exc:
            checks.append(Check(name, False, str(exc)))
    return checks, entry, chain.count


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Verify a ragkg ledger proof bundle against an EVM JSON-RPC node.")
    parser.add_argument("bundle", help="the proof bundle (JSON file)")
    parser.add_argument("--rpc", required=True, help="JSON-RPC URL of a node of the anchoring chain")
    parser.add_argument("--json", action="store_true", help="print a JSON report")
    parser.add_argument("--min-confirmations", type=int, default=1, metavar="N", help="blocks required (default 1)")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="S", help="seconds per RPC call (default 10)")
    args = parser.parse_args(argv)
    try:
        with open(args.bundle, encoding="utf-8") as file:
            bundle = read_bundle(file.read())
    except (OSError, ValueError) as exc:  # BundleError and UnicodeDecodeError are ValueErrors
        sys.stderr.write(f"cannot read the bundle {args.bundle}: {exc}\n")
        if args.json:
            sys.stdout.write(json.dumps({"ok": False, "error": str(exc), "checks": []}) + "\n")
        return 2
    checks, entry, count = verify(bundle, Rpc(args.rpc, args.timeout), args.min_confirmations)
    ok = all(check.ok for check in checks)
    if args.json:  # ASCII-escaped, so that no console encoding can break it
        report = {"ok": ok, "checks": [asdict(c) for c in checks], "entry": entry, "confirmations": count}
        lines = [json.dumps(report, indent=2)]
    else:
        lines = [
            f"{'ok' if c.ok else 'skipped' if c.detail.startswith('skipped:') else 'FAILED':8} {c.name:14} "
            + c.detail.removeprefix("skipped: ")
            for c in checks
        ]
        lines.append(
            "VERIFIED" if ok else f"NOT VERIFIED: {sum(not c.ok for c in checks)} of {len(checks)} checks did not pass"
        )
    sys.stdout.write("\n".join(lines) + "\n")
    unreachable = next((c.detail for c in checks if c.detail.startswith("skipped: cannot reach")), None)
    if unreachable:
        sys.stderr.write(unreachable.removeprefix("skipped: ") + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
