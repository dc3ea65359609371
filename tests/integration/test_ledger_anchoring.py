"""Anchoring the change log on the real anvil node: anchors appear, a proof bundle verifies with
the standalone verifier, and the faults of the issue: the chain down, a worker dying between
sending and confirming, a reorganisation dropping an anchor, and tampering with the log."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection
from pytest_django.fixtures import Settings

from apps.ledger import anchoring
from apps.ledger.anchoring import anchors_advance
from apps.ledger.canonical import entry_bytes
from apps.ledger.chain import Chain, ChainError, chain_from_settings
from apps.ledger.merkle import leaf_hash
from apps.ledger.models import Anchor, ChangeEntry
from apps.ledger.proofs import proof_bundle
from apps.ledger.services import tree_head
from apps.ledger.tasks import anchor_task
from apps.ledger.verify import log_verify
from tests.support import BASE_DIR, anvil_rpc, free_port, renames_append

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture(autouse=True)
def chain_up(live_services: None) -> None:
    """The test anvil node (started with the other live services)."""


def anchored_events(contract: str) -> list[tuple[int, str]]:
    logs = anvil_rpc("eth_getLogs", [{"address": contract, "fromBlock": "0x0", "toBlock": "latest"}])
    return [(int(log["topics"][1], 16), log["data"][2:]) for log in logs]


def confirmed(size: int) -> Anchor:
    return Anchor.objects.get(tree_size=size, state=Anchor.CONFIRMED)


def test_anchors_appear_on_the_chain_and_a_proof_verifies_standalone(tmp_path: Path) -> None:
    renames_append(5)
    first = anchors_advance()
    assert first.sent == [5] and first.confirmed == [5]
    renames_append(3)
    second = anchors_advance()
    assert second.sent == [8] and second.contract == first.contract
    assert anchors_advance().sent == []  # nothing new: nothing sent
    chain = chain_from_settings()
    assert chain.root_at(contract=first.contract, tree_size=8) == tree_head().root == confirmed(8).root
    assert anchored_events(first.contract) == [(5, confirmed(5).root), (8, confirmed(8).root)]

    report = log_verify(chain=chain)
    assert report.ok and report.anchors_checked == 2, report.problems

    bundle = proof_bundle(6)
    assert bundle["tree_size"] == 8 and bundle["anchor"]["tx_hash"] == confirmed(8).tx_hash
    path = tmp_path / "proof.json"
    path.write_text(json.dumps(bundle))
    verified = subprocess.run(
        [
            sys.executable,
            "-I",
            str(BASE_DIR / "tools" / "verify_proof.py"),
            str(path),
            "--rpc",
            settings.CHAIN_RPC_URL,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert json.loads(verified.stdout)["ok"] is True

    forged = {
        **bundle,
        "entry": base64.b64encode(entry_bytes(ChangeEntry.objects.get(seq=5).entry())).decode(),
    }
    path.write_text(json.dumps(forged))
    refused = subprocess.run(
        [sys.executable, "-I", str(BASE_DIR / "tools" / "verify_proof.py"), str(path), "--rpc", settings.CHAIN_RPC_URL],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1


def test_verify_names_an_entry_edited_or_deleted_in_the_database() -> None:
    renames_append(6)
    anchors_advance()
    chain = chain_from_settings()
    with connection.cursor() as cursor:  # maintenance mode stands in for an attacker who dropped the triggers
        cursor.execute("UPDATE ledger_changeentry SET actor = 'mallory' WHERE seq = 4")
    report = log_verify(chain=chain)
    assert report.problems[0].seq == 4 and "entry #4 no longer matches its leaf hash" in report.problems[0].message

    # A careful attacker also rewrites the stored leaf hash: the anchored root on chain still gives it away.
    row = ChangeEntry.objects.get(seq=4)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE ledger_changeentry SET leaf_hash = %s WHERE seq = 4", [leaf_hash(entry_bytes(row.entry())).hex()]
        )
    report = log_verify(chain=chain)
    assert [problem.kind for problem in report.problems] == ["anchor", "tree"]
    assert "do not give the root anchored on chain" in report.problems[0].message
    # The stored subtrees, written when the entry was appended, still hold the original.
    assert "disagree with the entries (the first over entries #4 to #5)" in report.problems[1].message

    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM ledger_changeentry WHERE seq = 5")
    report = log_verify(chain=chain)
    assert any(problem.seq == 5 and "removed" in problem.message for problem in report.problems)


def test_with_the_chain_down_entries_go_on_and_anchors_go_out_later(settings: Settings) -> None:
    renames_append(2)
    anchors_advance()
    settings.CHAIN_RPC_URL = f"http://127.0.0.1:{free_port()}"
    renames_append(3)  # the log does not depend on the chain
    with pytest.raises(ChainError, match="unreachable"):
        anchors_advance()
    assert anchor_task()["error"]  # the beat task logs it and waits for the next round
    settings.CHAIN_RPC_URL = "http://127.0.0.1:18545"
    assert anchors_advance().confirmed == [5]
    assert log_verify(chain=chain_from_settings()).ok


def test_a_worker_dying_between_sending_and_confirming_leaves_no_double_anchor_and_no_gap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    renames_append(1)
    contract = anchors_advance().contract
    renames_append(2)

    def die(*args: Any, **kwargs: Any) -> None:
        raise SystemExit("worker killed after saving the signed anchor, before broadcasting it")

    monkeypatch.setattr(Chain, "broadcast", die)
    with pytest.raises(SystemExit):
        anchors_advance()
    sent = Anchor.objects.get(tree_size=3)
    assert sent.state == Anchor.SENT and sent.raw_tx
    monkeypatch.undo()
    assert anchors_advance().confirmed == [3]  # the same signed transaction, broadcast now
    assert Anchor.objects.get(tree_size=3).tx_hash == sent.tx_hash

    renames_append(1)
    real_follow = anchoring._follow

    def die_after_broadcast(chain: Any, anchor: Anchor, head: int, report: Any) -> None:
        if anchor.tree_size == 4:  # the new anchor went out; the worker dies before following it
            raise SystemExit("worker killed after broadcasting, before confirming")
        real_follow(chain, anchor, head, report)

    monkeypatch.setattr(anchoring, "_follow", die_after_broadcast)
    with pytest.raises(SystemExit):
        anchors_advance()
    monkeypatch.undo()
    assert anchors_advance().confirmed == [4]
    assert [size for size, _ in anchored_events(contract)] == [1, 3, 4]
    assert log_verify(chain=chain_from_settings()).ok


def test_an_anchor_mined_just_after_the_head_was_read_is_confirmed_in_the_same_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The node mines the anchor between the round reading the chain's head and asking for the
    receipt: the receipt names a block newer than that head, which must not count as unconfirmed."""
    renames_append(1)
    anchors_advance()
    renames_append(1)
    real_broadcast, real_head = Chain.broadcast, Chain.head
    before_broadcast: list[int] = []
    broadcasts: list[str] = []

    def broadcast(chain: Chain, tx: Any) -> None:
        # Only the first broadcast makes the next head read stale: on a slow node the round may
        # broadcast the same transaction again while it waits for the receipt.
        if not broadcasts:
            before_broadcast.append(real_head(chain))
        broadcasts.append(tx.tx_hash)
        real_broadcast(chain, tx)

    def head(chain: Chain) -> int:  # the first read after the broadcast still sees the block before it
        return before_broadcast.pop() if before_broadcast else real_head(chain)

    monkeypatch.setattr(Chain, "broadcast", broadcast)
    monkeypatch.setattr(Chain, "head", head)
    report = anchors_advance()
    assert report.sent == [2] and report.confirmed == [2], report
    assert confirmed(2).confirmations == 1


def test_a_node_whose_head_lags_behind_its_receipts_still_confirms_the_anchor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Behind a load balancer the node answering `head` may be a block behind the one that gave the
    receipt: a transaction in block N means the chain is at least at N."""
    renames_append(1)
    anchors_advance()
    renames_append(1)
    stale = Chain.head(chain_from_settings())
    monkeypatch.setattr(Chain, "head", lambda chain: stale)
    report = anchors_advance()
    assert report.sent == [2] and report.confirmed == [2], report
    assert confirmed(2).confirmations == 1


def test_a_reorganisation_that_drops_an_anchor_is_noticed_and_the_anchor_resent(settings: Settings) -> None:
    settings.CHAIN_CONFIRMATIONS = 3
    renames_append(2)
    contract = anchors_advance().contract
    anvil_rpc("anvil_mine", [2])
    assert anchors_advance().confirmed == [2]
    snapshot = anvil_rpc("evm_snapshot", [])
    renames_append(2)
    anchors_advance()
    pending = Anchor.objects.get(tree_size=4)
    assert pending.state == Anchor.SENT and pending.confirmations == 1
    anvil_rpc("evm_revert", [snapshot])  # the anchor's block leaves the chain ...
    anvil_rpc("anvil_mine", [3])  # ... and other blocks take its place
    round_ = anchors_advance()
    assert round_.dropped == [4] and round_.sent == [4]
    assert Anchor.objects.get(pk=pending.pk).state == Anchor.DROPPED
    anvil_rpc("anvil_mine", [2])
    anchors_advance()
    assert confirmed(4).tx_hash != pending.tx_hash or confirmed(4).block_hash != pending.block_hash
    assert [size for size, _ in anchored_events(contract)] == [2, 4]
    assert log_verify(chain=chain_from_settings()).ok


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("ledger", *args, stdout=out)
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue()
    return 0, out.getvalue()


def test_the_ledger_command_deploys_anchors_verifies_and_writes_proofs(tmp_path: Path) -> None:
    code, out = run("deploy")
    assert code == 0 and out.startswith("anchor contract: 0x")
    renames_append(4)
    code, out = run("anchor")
    assert code == 0 and json.loads(out)["confirmed"] == [4], out
    status = json.loads(run("status", "--json")[1])
    assert status["tree_size"] == 4 and status["anchors"][0]["state"] == "confirmed"
    code, out = run("verify", "--json")
    assert code == 0 and json.loads(out)["ok"] and json.loads(out)["anchors_checked"] == 1
    bundle = tmp_path / "proof-2.json"
    assert run("proof", "2", "--out", str(bundle))[0] == 0
    assert json.loads(bundle.read_text())["leaf_index"] == 2
    assert run("apply")[1].startswith("0 graph change(s) applied, 0 pending")

    with connection.cursor() as cursor:
        cursor.execute("UPDATE ledger_changeentry SET subject_id = 'e-forged' WHERE seq = 2")
    code, out = run("verify")
    assert code == 1 and "first: entry #2 no longer matches its leaf hash" in out
    with pytest.raises(CommandError, match="no change-log entry #99"):
        call_command("ledger", "proof", "99")
