"""apps/ledger/chain.py against the real anvil node scripts/services.py runs for the suite.

Every test deploys its own anchor contract, so tests share the chain but no contract.
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

from apps.ledger.chain import (
    ANVIL_DEV_KEY,
    Chain,
    ChainError,
    ChainRefused,
    Receipt,
    chain_from_settings,
    contract_artifact,
)
from tests.conftest import services
from tests.support import anvil_rpc, free_port

pytestmark = pytest.mark.integration

# anvil's second development account: funded, but not the contracts' owner.
OTHER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
ROOT = bytes(range(32))
OTHER_ROOT = bytes(range(1, 33))


@pytest.fixture(scope="session")
def chain_service() -> Iterator[None]:
    """The test anvil node alone (started with the others by ``live_services`` too)."""
    running = json.loads(services("status", "--json").stdout)["chain"]["running"]
    result = services("up", "chain", check=False)
    if result.returncode != 0:
        pytest.fail(f"could not start the test chain:\n{result.stdout}\n{result.stderr}")
    yield
    if not running:
        services("down", "chain")


def local_chain(*, key: str = ANVIL_DEV_KEY, chain_id: int | None = None, timeout: float = 5.0) -> Chain:
    return Chain(
        rpc_url=settings.CHAIN_RPC_URL, chain_id=chain_id or settings.CHAIN_ID, private_key=key, timeout=timeout
    )


def mined(chain: Chain, tx_hash: str, timeout: float = 10.0) -> Receipt:
    """The receipt, once anvil has mined the transaction (automine runs just after the send returns)."""
    deadline = time.monotonic() + timeout
    while (receipt := chain.receipt(tx_hash)) is None:
        assert time.monotonic() < deadline, f"{tx_hash} was not mined in {timeout}s"
        time.sleep(0.01)
    return receipt


@pytest.fixture
def chain(chain_service: None) -> Chain:
    return local_chain()


@pytest.fixture
def contract(chain: Chain) -> str:
    tx, address = chain.deploy_sign(nonce=chain.pending_nonce())
    chain.broadcast(tx)
    receipt = mined(chain, tx.tx_hash)
    assert receipt.ok and receipt.anchored == ()
    assert chain.has_code(address)
    return address


def anchor(chain: Chain, contract: str, tree_size: int, root: bytes) -> str:
    tx = chain.anchor_sign(contract=contract, tree_size=tree_size, root=root, nonce=chain.pending_nonce())
    chain.broadcast(tx)
    mined(chain, tx.tx_hash)
    return tx.tx_hash


def test_deploy_anchor_and_read_back(chain: Chain, contract: str) -> None:
    chain.check()
    assert chain.root_at(contract=contract, tree_size=5) is None
    tx = chain.anchor_sign(contract=contract, tree_size=5, root=ROOT, nonce=chain.pending_nonce())
    assert tx.sender == chain.address and tx.tx_hash.startswith("0x") and tx.raw.startswith("0x")
    chain.broadcast(tx)

    receipt = mined(chain, tx.tx_hash)
    assert receipt.ok
    assert receipt.anchored == ((5, ROOT.hex()),)
    assert receipt.block_number == chain.head()
    assert chain.block_hash(receipt.block_number) == receipt.block_hash
    assert chain.root_at(contract=contract, tree_size=5) == ROOT.hex()
    assert chain.root_at(contract=contract, tree_size=4) is None


def test_deploy_address_is_predicted(chain: Chain) -> None:
    nonce = chain.pending_nonce()
    tx, address = chain.deploy_sign(nonce=nonce)
    assert tx.nonce == nonce
    assert not chain.has_code(address)
    chain.broadcast(tx)
    mined(chain, tx.tx_hash)
    assert chain.has_code(address)
    assert chain.pending_nonce() == nonce + 1


def test_resending_is_harmless(chain: Chain, contract: str) -> None:
    tx = chain.anchor_sign(contract=contract, tree_size=3, root=ROOT, nonce=chain.pending_nonce())
    chain.broadcast(tx)
    first = mined(chain, tx.tx_hash)
    head = chain.head()

    chain.broadcast(tx)  # the very same signed transaction: already mined, a success
    chain.broadcast(tx)
    assert chain.head() == head
    assert chain.receipt(tx.tx_hash) == first

    again = anchor(chain, contract, 3, ROOT)  # the same head in a new transaction: no event, no change
    receipt = mined(chain, again)
    assert receipt.ok and receipt.anchored == ()
    assert chain.root_at(contract=contract, tree_size=3) == ROOT.hex()


def test_a_pending_transaction_sent_again_is_a_success(chain: Chain, contract: str) -> None:
    anvil_rpc("evm_setAutomine", [False])
    try:
        tx = chain.anchor_sign(contract=contract, tree_size=8, root=ROOT, nonce=chain.pending_nonce())
        chain.broadcast(tx)
        chain.broadcast(tx)  # the node holds it already ("already known")
        assert chain.receipt(tx.tx_hash) is None
        anvil_rpc("evm_mine", [])
    finally:
        anvil_rpc("evm_setAutomine", [True])
    receipt = mined(chain, tx.tx_hash)
    assert receipt.anchored == ((8, ROOT.hex()),)


def test_conflicting_root_is_refused(chain: Chain, contract: str) -> None:
    anchor(chain, contract, 7, ROOT)
    with pytest.raises(
        ChainRefused, match=rf"refused the transaction: ConflictingRoot\(treeSize=7, anchored=0x{ROOT.hex()}\)"
    ):
        chain.anchor_sign(contract=contract, tree_size=7, root=OTHER_ROOT, nonce=chain.pending_nonce())
    assert chain.root_at(contract=contract, tree_size=7) == ROOT.hex()


def test_empty_head_is_refused(chain: Chain, contract: str) -> None:
    with pytest.raises(ChainRefused, match=r"EmptyHead\(\)"):
        chain.anchor_sign(contract=contract, tree_size=0, root=ROOT, nonce=chain.pending_nonce())
    with pytest.raises(ChainRefused, match=r"EmptyHead\(\)"):
        chain.anchor_sign(contract=contract, tree_size=1, root=bytes(32), nonce=chain.pending_nonce())


def test_a_reverting_transaction_mined_anyway_is_not_ok(chain: Chain, contract: str) -> None:
    """A conflicting anchor signed before the first one was mined reverts on chain: receipt.ok is False."""
    first = chain.anchor_sign(contract=contract, tree_size=9, root=ROOT, nonce=chain.pending_nonce())
    second = chain.anchor_sign(contract=contract, tree_size=9, root=OTHER_ROOT, nonce=first.nonce + 1)
    chain.broadcast(first)
    chain.broadcast(second)
    receipt = mined(chain, second.tx_hash)
    assert not receipt.ok and receipt.anchored == ()
    assert chain.root_at(contract=contract, tree_size=9) == ROOT.hex()


def test_only_the_owner_anchors(chain_service: None, contract: str) -> None:
    other = local_chain(key=OTHER_KEY)
    assert other.address != local_chain().address
    with pytest.raises(ChainRefused, match=r"NotOwner\(\)"):
        other.anchor_sign(contract=contract, tree_size=1, root=ROOT, nonce=other.pending_nonce())


def test_a_used_nonce_is_refused(chain: Chain, contract: str) -> None:
    tx = chain.anchor_sign(contract=contract, tree_size=11, root=ROOT, nonce=chain.pending_nonce() - 1)
    with pytest.raises(ChainRefused, match="refused the transaction: nonce too low"):
        chain.broadcast(tx)


def test_wrong_chain_id(chain_service: None) -> None:
    with pytest.raises(ChainError, match=rf"^chain id 31337 at {settings.CHAIN_RPC_URL}, expected 5$"):
        local_chain(chain_id=5).check()


def test_unreachable_chain_fails_fast(chain_service: None) -> None:
    port = free_port()
    started = time.monotonic()
    unreachable = Chain(
        rpc_url=f"http://127.0.0.1:{port}/v3/api-key", chain_id=31337, private_key=ANVIL_DEV_KEY, timeout=2
    )
    with pytest.raises(ChainError, match=rf"^the chain at http://127.0.0.1:{port}/… is unreachable$"):
        unreachable.check()
    signed, _ = local_chain().deploy_sign(nonce=0)
    with pytest.raises(ChainError, match="unreachable"):
        unreachable.broadcast(signed)
    assert time.monotonic() - started < 5


def test_a_silent_chain_times_out() -> None:
    with socket.socket() as listener:  # accepts connections (backlog), never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        silent = Chain(rpc_url=f"http://127.0.0.1:{port}", chain_id=31337, private_key=ANVIL_DEV_KEY, timeout=0.5)
        started = time.monotonic()
        with pytest.raises(ChainError, match="did not answer in time"):
            silent.head()
        assert time.monotonic() - started < 3


def test_a_receipt_leaves_with_its_block(chain: Chain, contract: str) -> None:
    """A reorganisation (here: anvil's snapshot and revert) takes the receipt and the block hash away."""
    snapshot = anvil_rpc("evm_snapshot", [])
    receipt = mined(chain, anchor(chain, contract, 12, ROOT))
    tx_hash = receipt.tx_hash
    anvil_rpc("anvil_mine", [3])
    assert chain.head() == receipt.block_number + 3
    assert anvil_rpc("evm_revert", [snapshot]) is True
    assert chain.receipt(tx_hash) is None
    assert chain.block_hash(receipt.block_number) is None
    assert chain.root_at(contract=contract, tree_size=12) is None


def test_state_survives_a_restart(chain: Chain, contract: str) -> None:
    tx_hash = anchor(chain, contract, 21, ROOT)
    receipt = mined(chain, tx_hash)
    state = Path(settings.STATE_DIR) / "chain" / "anvil-state.json"

    assert re.search(r"^chain\s+stopped$", services("down", "chain").stdout, re.MULTILINE)
    assert state.is_file()
    with pytest.raises(ChainError, match="unreachable"):
        chain.head()
    services("up", "chain")

    assert chain.has_code(contract)
    assert chain.root_at(contract=contract, tree_size=21) == ROOT.hex()
    assert chain.receipt(tx_hash) == receipt
    assert chain.block_hash(receipt.block_number) == receipt.block_hash
    anchor(chain, contract, 22, OTHER_ROOT)  # the nonce carried over too
    assert chain.root_at(contract=contract, tree_size=22) == OTHER_ROOT.hex()


def test_a_broken_state_file_is_replaced_by_the_last_good_copy(chain: Chain, contract: str) -> None:
    """anvil rewrites its state file in place; one cut short by a kill is replaced at the next start."""
    state = Path(settings.STATE_DIR) / "chain" / "anvil-state.json"
    services("down", "chain")
    services("up", "chain")  # the copy: taken at each start
    services("down", "chain")
    state.write_text(state.read_text()[:100])
    started = services("up", "chain")
    assert "was unreadable" in started.stderr and "restored the copy from the last start" in started.stderr
    assert chain.has_code(contract)
    broken = list(state.parent.glob("anvil-state.json.broken-*"))
    assert broken
    for path in broken:
        path.unlink()


def test_key_from_settings(tmp_path: Path) -> None:
    with override_settings(CHAIN_PRIVATE_KEY=OTHER_KEY, CHAIN_PRIVATE_KEY_FILE=""):
        assert chain_from_settings().address == local_chain(key=OTHER_KEY).address
    key_file = tmp_path / "key"
    key_file.write_text(OTHER_KEY + "\n")
    with override_settings(CHAIN_PRIVATE_KEY="", CHAIN_PRIVATE_KEY_FILE=str(key_file)):
        assert chain_from_settings().address == local_chain(key=OTHER_KEY).address
    with override_settings(CHAIN_PRIVATE_KEY="", CHAIN_PRIVATE_KEY_FILE=""):
        assert chain_from_settings().address == local_chain().address  # the managed anvil's dev account
    with (
        override_settings(CHAIN_PRIVATE_KEY="", CHAIN_PRIVATE_KEY_FILE="", MANAGED_SERVICES=["neo4j"]),
        pytest.raises(ChainError, match="set CHAIN_PRIVATE_KEY or CHAIN_PRIVATE_KEY_FILE"),
    ):
        chain_from_settings()
    with (
        override_settings(CHAIN_PRIVATE_KEY="", CHAIN_PRIVATE_KEY_FILE="", CHAIN_RPC_URL="https://rpc.example.org"),
        pytest.raises(ChainError, match="set CHAIN_PRIVATE_KEY"),
    ):
        chain_from_settings()
    with (
        override_settings(CHAIN_PRIVATE_KEY="", CHAIN_PRIVATE_KEY_FILE=str(tmp_path / "missing")),
        pytest.raises(ChainError, match="cannot read CHAIN_PRIVATE_KEY_FILE"),
    ):
        chain_from_settings()


def test_errors_never_show_the_key() -> None:
    bad_key = "0x" + "ab" * 31
    with pytest.raises(ChainError) as caught:
        Chain(rpc_url=settings.CHAIN_RPC_URL, chain_id=31337, private_key=bad_key, timeout=1)
    assert "ab" * 31 not in str(caught.value)
    assert caught.value.__cause__ is None
    assert ANVIL_DEV_KEY[2:] not in repr(local_chain())


def test_the_artifact_is_the_code_on_chain(chain: Chain, contract: str) -> None:
    """The runtime code is the artifact's deployedBytecode with the owner (an immutable) filled in."""
    code = anvil_rpc("eth_getCode", [contract, "latest"])
    owner = chain.address[2:].lower().rjust(64, "0")
    assert code.count(owner) >= 1
    assert code.replace(owner, "0" * 64) == contract_artifact()["deployedBytecode"]
    assert not chain.has_code(chain.address)
