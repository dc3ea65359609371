"""The one module that talks to the chain: an EVM JSON-RPC node holding the anchor contract.

``Chain`` signs locally (the key never leaves the process) and speaks plain JSON-RPC over HTTP,
every call bounded by the timeout and never retried here: callers (the anchoring task) retry.
Every failure surfaces as ``ChainError`` with a message fit for users; it never holds the key.
Signing and sending are separate steps so that a caller can store a signed transaction first
and send it again after a crash: ``broadcast`` of a transaction the node already has is a success.
The contract itself is contracts/RagkgLedgerAnchor.sol (docs/chain.md).
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests
from eth_abi.abi import decode as abi_decode
from eth_account import Account
from eth_account.signers.local import LocalAccount
from eth_typing import ChecksumAddress, HexStr
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from web3 import HTTPProvider, Web3
from web3.exceptions import (
    BlockNotFound,
    ContractLogicError,
    TransactionNotFound,
    Web3Exception,
    Web3RPCError,
)
from web3.types import Nonce, TxParams, TxReceipt
from web3.utils.address import get_create_address

logger = logging.getLogger(__name__)

ARTIFACT = Path(__file__).resolve().parent / "contract" / "RagkgLedgerAnchor.json"
# anvil's first development account (mnemonic "test test ... junk"): public knowledge, so it is
# used only when the chain is the local anvil node scripts/services.py manages (on a loopback URL).
ANVIL_DEV_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
# An anchor costs about 70k gas on L1 (two fresh storage slots and one log); the node's estimate,
# plus a quarter, is used when it is larger (L2s price calldata into gas).
ANCHOR_GAS_FLOOR = 120_000
ANCHORED_TOPIC = keccak(text="Anchored(uint64,bytes32)")


class ChainError(Exception):
    """The chain could not do what was asked; the message says why, fit for users."""


class ChainRefused(ChainError):
    """The node or the contract refused a transaction (a revert, a nonce already used, no funds, …):
    sending it again will not help, unlike a chain that is down."""


@dataclass(frozen=True)
class SignedTx:
    tx_hash: str  # "0x…"
    raw: str  # "0x…", the signed transaction as sent with eth_sendRawTransaction
    nonce: int
    sender: str


@dataclass(frozen=True)
class Receipt:
    tx_hash: str
    block_number: int
    block_hash: str
    ok: bool
    # The Anchored events the called contract emitted in this transaction: (tree size, root hex without 0x).
    anchored: tuple[tuple[int, str], ...]


@cache
def contract_artifact() -> dict[str, Any]:
    """The committed compiler output (abi, bytecode, …) of the anchor contract; treat it as read-only."""
    artifact: dict[str, Any] = json.loads(ARTIFACT.read_text(encoding="utf-8"))
    return artifact


def _shown(url: str) -> str:
    """The URL without credentials, query or path (hosted nodes put API keys there)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    tail = "/…" if parts.path not in ("", "/") or parts.query else ""
    return f"{parts.scheme}://{netloc}{tail}"


def _hex(value: bytes) -> str:
    return "0x" + bytes(value).hex()


def _address(value: str) -> ChecksumAddress:
    try:
        return to_checksum_address(value)
    except ValueError:
        raise ChainError(f"{value!r} is not an address") from None


class Chain:
    """A signer on one chain (checked by id) behind one JSON-RPC endpoint."""

    def __init__(self, *, rpc_url: str, chain_id: int, private_key: str, timeout: float) -> None:
        self.rpc_url = rpc_url
        self.chain_id = chain_id
        self._where = _shown(rpc_url)
        try:
            self._account: LocalAccount = Account.from_key(private_key.strip())
        except Exception:  # the key's own error could quote it: say nothing of it
            raise ChainError("the chain signing key is not a valid private key (32 bytes, hex)") from None
        self.address: str = self._account.address
        provider = HTTPProvider(rpc_url, request_kwargs={"timeout": timeout}, exception_retry_configuration=None)
        self._w3 = Web3(provider, middleware=[])
        self._contract = self._w3.eth.contract(abi=contract_artifact()["abi"])
        self._errors = {
            keccak(text=f"{item['name']}({','.join(i['type'] for i in item['inputs'])})")[:4]: item
            for item in contract_artifact()["abi"]
            if item["type"] == "error"
        }

    def __repr__(self) -> str:
        return f"Chain({self._where}, chain id {self.chain_id}, signer {self.address})"

    # --- reading -------------------------------------------------------------------------------

    def check(self) -> None:
        """Raise ChainError unless the node answers and reports the expected chain id."""
        with self._rpc():
            actual = self._w3.eth.chain_id
        if actual != self.chain_id:
            raise ChainError(f"chain id {actual} at {self._where}, expected {self.chain_id}")

    def head(self) -> int:
        with self._rpc():
            return int(self._w3.eth.block_number)

    def block_hash(self, number: int) -> str | None:
        with self._rpc():
            try:
                block = self._w3.eth.get_block(number)
            except BlockNotFound:
                return None
        return _hex(block["hash"]) if block and "hash" in block else None

    def pending_nonce(self) -> int:
        with self._rpc():
            return int(self._w3.eth.get_transaction_count(_address(self.address), "pending"))

    def has_code(self, address: str) -> bool:
        with self._rpc():
            return len(self._w3.eth.get_code(_address(address))) > 0

    def root_at(self, *, contract: str, tree_size: int) -> str | None:
        """The root anchored for the tree size (hex without 0x), None when there is none."""
        data = self._contract.encode_abi("rootAt", args=[tree_size])
        with self._rpc():
            root = bytes(self._w3.eth.call({"to": _address(contract), "data": data}))
        if len(root) != 32:
            raise ChainError(f"no anchor contract at {contract} on the chain at {self._where}")
        return root.hex() if any(root) else None

    def receipt(self, tx_hash: str) -> Receipt | None:
        """The transaction's receipt once it is in a block, else None."""
        with self._rpc():
            try:
                receipt = self._w3.eth.get_transaction_receipt(HexStr(tx_hash))
            except TransactionNotFound:
                return None
        if receipt is None or receipt.get("blockNumber") is None:
            return None
        return Receipt(
            tx_hash=_hex(receipt["transactionHash"]),
            block_number=int(receipt["blockNumber"]),
            block_hash=_hex(receipt["blockHash"]),
            ok=receipt["status"] == 1,
            anchored=self._anchored(receipt),
        )

    @staticmethod
    def _anchored(receipt: TxReceipt) -> tuple[tuple[int, str], ...]:
        target = receipt.get("to") or receipt.get("contractAddress")
        events = []
        for log in receipt["logs"]:
            topics = [bytes(topic) for topic in log["topics"]]
            if str(log["address"]).lower() != str(target).lower() or len(topics) != 2:
                continue
            if topics[0] == ANCHORED_TOPIC and len(log["data"]) == 32:
                events.append((int.from_bytes(topics[1], "big"), bytes(log["data"]).hex()))
        return tuple(events)

    # --- signing and sending -----------------------------------------------------------------

    def deploy_sign(self, *, nonce: int) -> tuple[SignedTx, str]:
        """A signed creation of the anchor contract, and the address it will have once mined."""
        tx: TxParams = {"from": _address(self.address), "data": contract_artifact()["bytecode"]}
        with self._rpc(sending=True):
            gas = self._w3.eth.estimate_gas(tx) * 5 // 4
        address = get_create_address(_address(self.address), Nonce(nonce))
        return self._sign({**tx, "gas": gas, "nonce": Nonce(nonce)}), address

    def anchor_sign(self, *, contract: str, tree_size: int, root: bytes, nonce: int) -> SignedTx:
        """A signed anchor(tree_size, root) call; ChainError when the contract would refuse it now."""
        if len(root) != 32:
            raise ChainError(f"a tree root has 32 bytes, not {len(root)}")
        data = self._contract.encode_abi("anchor", args=[tree_size, root])
        tx: TxParams = {"from": _address(self.address), "to": _address(contract), "data": data}
        with self._rpc(sending=True):
            estimate = self._w3.eth.estimate_gas(tx)  # runs the call: a refusal shows here, before signing
        return self._sign({**tx, "gas": max(ANCHOR_GAS_FLOOR, estimate * 5 // 4), "nonce": Nonce(nonce)})

    def broadcast(self, tx: SignedTx) -> None:
        """Send the signed transaction; one the node already knows (pending or mined) is a success."""
        try:
            with self._rpc(sending=True):
                self._w3.eth.send_raw_transaction(HexStr(tx.raw))
        except ChainRefused:
            if self._known(tx.tx_hash):
                logger.info("transaction %s was already known to the chain", tx.tx_hash)
                return
            raise

    def _known(self, tx_hash: str) -> bool:
        with self._rpc():
            try:
                return self._w3.eth.get_transaction(HexStr(tx_hash)) is not None
            except TransactionNotFound:
                return False

    def _sign(self, tx: TxParams) -> SignedTx:
        with self._rpc():
            fees = self._fees()
        fields: dict[str, Any] = {**tx, **fees, "chainId": self.chain_id}
        signed = self._account.sign_transaction(fields)
        return SignedTx(
            tx_hash=_hex(signed.hash), raw=_hex(signed.raw_transaction), nonce=int(tx["nonce"]), sender=self.address
        )

    def _fees(self) -> dict[str, int]:
        """EIP-1559 fees from the node (twice the base fee plus its tip), legacy gas price before London."""
        base_fee = self._w3.eth.get_block("latest").get("baseFeePerGas")
        if base_fee is None:
            return {"gasPrice": int(self._w3.eth.gas_price)}
        tip = int(self._w3.eth.max_priority_fee)
        return {"maxFeePerGas": 2 * int(base_fee) + tip, "maxPriorityFeePerGas": tip}

    # --- errors ----------------------------------------------------------------------------------

    @contextmanager
    def _rpc(self, *, sending: bool = False) -> Iterator[None]:
        """Turn every failure of the calls inside into a ChainError (ChainRefused for a refused transaction)."""
        try:
            yield
        except ContractLogicError as exc:
            raise ChainRefused(f"the chain refused the transaction: {self._reason(exc)}") from exc
        except requests.Timeout as exc:
            raise ChainError(f"the chain at {self._where} did not answer in time") from exc
        except requests.ConnectionError as exc:
            raise ChainError(f"the chain at {self._where} is unreachable") from exc
        except requests.HTTPError as exc:
            status = exc.response.status_code if exc.response is not None else "?"
            raise ChainError(f"the chain at {self._where} answered HTTP {status}") from exc
        except Web3RPCError as exc:
            if sending:
                raise ChainRefused(f"the chain refused the transaction: {self._rpc_message(exc)}") from exc
            raise ChainError(f"the chain at {self._where} answered with an error: {self._rpc_message(exc)}") from exc
        except (Web3Exception, requests.RequestException, ValueError) as exc:
            raise ChainError(f"the chain at {self._where} gave an unusable answer: {type(exc).__name__}") from exc

    def _reason(self, exc: ContractLogicError) -> str:
        data = exc.data if isinstance(exc.data, str) else None
        if data and data.startswith("0x") and len(data) >= 10:
            try:
                raw = bytes.fromhex(data[2:])
            except ValueError:
                return exc.message or "execution reverted"
            error = self._errors.get(raw[:4])
            if error is not None:
                return self._describe(error, raw[4:])
        return exc.message or "execution reverted"

    @staticmethod
    def _describe(error: dict[str, Any], payload: bytes) -> str:
        types = [item["type"] for item in error["inputs"]]
        try:
            values = abi_decode(types, payload)
        except Exception:
            return str(error["name"])
        shown = ", ".join(
            f"{item['name']}={_hex(value) if isinstance(value, bytes) else value}"
            for item, value in zip(error["inputs"], values, strict=True)
        )
        return f"{error['name']}({shown})"

    @staticmethod
    def _rpc_message(exc: Web3RPCError) -> str:
        response = exc.rpc_response or {}
        error = response.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        return str(exc.message)


def _signing_key() -> str:
    from django.conf import settings  # here, not at import: the module stays usable without Django

    if settings.CHAIN_PRIVATE_KEY:
        return str(settings.CHAIN_PRIVATE_KEY)
    if settings.CHAIN_PRIVATE_KEY_FILE:
        try:
            return Path(settings.CHAIN_PRIVATE_KEY_FILE).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ChainError(
                f"cannot read CHAIN_PRIVATE_KEY_FILE {settings.CHAIN_PRIVATE_KEY_FILE}: {exc.strerror}"
            ) from None
    if "chain" in settings.MANAGED_SERVICES and urlsplit(settings.CHAIN_RPC_URL).hostname in LOOPBACK:
        return ANVIL_DEV_KEY
    raise ChainError(
        "set CHAIN_PRIVATE_KEY or CHAIN_PRIVATE_KEY_FILE to the key that signs anchors "
        "(only the local anvil node has a development key)"
    )


def chain_from_settings(*, read_only: bool = False) -> Chain:
    """The Chain the settings describe (CHAIN_RPC_URL, CHAIN_ID, the key, CHAIN_TIMEOUT).

    ``read_only``: for checking anchors, which needs no key; without one configured, a throwaway
    key stands in (it signs nothing).
    """
    from django.conf import settings

    try:
        key = _signing_key()
    except ChainError:
        if not read_only:
            raise
        key = "0x" + secrets.token_hex(32)
    return Chain(
        rpc_url=settings.CHAIN_RPC_URL,
        chain_id=settings.CHAIN_ID,
        private_key=key,
        timeout=settings.CHAIN_TIMEOUT,
    )
